"""The client-neutral surface every scenario is written against.

One adapter per stock client maps these calls onto that client's own API, so a scenario is
written once and runs with every client. An adapter method the client library cannot express
raises NotSupported (reported as a skip with the reason). Adapters must not paper over broker
behaviour: errors the client surfaces propagate, translated to Kafka's error names where the
scenario checks them (ProduceFailed.error, e.g. "MESSAGE_TOO_LARGE").

An adapter instance lives for one scenario run; ``close()`` releases everything it opened.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from compat.model import ClientSecurity, ClusterView, GroupDescription, Message, NotSupported, Record
from storage.values import TopicPartition

Offsets = dict[TopicPartition, int]


class ProducerHandle:
    """A producer opened by an adapter."""

    def send(self, topic: str, records: Sequence[Record]) -> list[tuple[int, int]]:
        """Send and wait for delivery; (partition, offset) per record (offset -1 when acks=0)."""
        raise NotSupported("send")

    def close(self) -> None:
        pass


class TransactionalProducerHandle(ProducerHandle):
    """A producer with a transactional.id, its init_transactions done (or, for clients that init as they start a
    transaction, done by begin). ``send`` produces inside the open transaction and waits for delivery where the
    client reports deliveries. A call the client reports as fenced by a newer instance raises ProducerFenced."""

    def begin(self) -> None:
        raise NotSupported("begin_transaction")

    def send_offsets(self, offsets: dict[TopicPartition, int], group_id: str,
                     consumer: ConsumerHandle | None = None) -> None:
        """send_offsets_to_transaction: the group's next offsets, committed with the transaction. ``consumer`` is
        the group member that read the input, where the client takes its group metadata from one."""
        raise NotSupported("send_offsets_to_transaction")

    def commit(self) -> None:
        raise NotSupported("commit_transaction")

    def abort(self) -> None:
        raise NotSupported("abort_transaction")


class ConsumerHandle:
    """A consumer opened by an adapter (subscribed to topics, or with manual assignment)."""

    name = "this client's consumer"

    def poll(self, max_records: int, timeout_s: float) -> list[Message]:
        raise NotSupported(f"{self.name} offers no poll")

    def assignment(self) -> set[TopicPartition]:
        raise NotSupported(f"{self.name} offers no assignment")

    def commit(self, offsets: dict[TopicPartition, tuple[int, str]]) -> None:
        """Synchronously commit offset and metadata per partition."""
        raise NotSupported(f"{self.name} offers no commit with metadata")

    def committed(self, tps: Sequence[TopicPartition]) -> dict[TopicPartition, tuple[int, str] | None]:
        raise NotSupported(f"{self.name} offers no committed")

    def seek(self, tp: TopicPartition, offset: int) -> None:
        raise NotSupported(f"{self.name} offers no seek")

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        raise NotSupported(f"{self.name} offers no pause")

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        raise NotSupported(f"{self.name} offers no resume")

    def close(self) -> None:
        pass


class PositionedConsumer(ConsumerHandle):
    """A manually assigned consumer that tracks each partition's next offset itself (clients read through one
    short-lived run per poll: kcat, the Java runner, Spark). `start` is the position before the first poll."""

    def __init__(self, assign: Sequence[TopicPartition], start: int | None) -> None:
        self._positions: dict[TopicPartition, int | None] = {tp: start for tp in assign}

    def assignment(self) -> set[TopicPartition]:
        return set(self._positions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._positions[tp] = offset


class ClientAdapter:
    name = "base"
    # False for clients that cannot tell the offsets the broker assigned (kcat -P).
    reports_produce_offsets = True
    # False for clients that print an empty key or value the same as a null one (kcat's %K/%S).
    distinguishes_empty_from_null = True

    # False for adapters that cannot be given a secured target's settings yet (reported as skip there).
    supports_security = True
    # The scenarios this client runs (None: every one). An older release of a client whose newest release runs
    # every scenario runs a core set, to keep the matrix short; the others are not run (not reported at all).
    scenarios: frozenset[str] | None = None

    @classmethod
    def runs(cls, scenario_id: str) -> bool:
        return cls.scenarios is None or scenario_id in cls.scenarios

    def __init__(self, bootstrap: str, timeout_s: float = 15.0, security: ClientSecurity | None = None) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.security = security  # None: PLAINTEXT

    @classmethod
    def prepare(cls) -> None:
        """Slow one-time set-up of the client library (a JVM to start, jars to resolve), run before a scenario's
        time limit starts; raises when the client cannot be set up. Nothing by default."""

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when the client can run here, else why not (reported as skip for every scenario)."""
        return None

    # -- metadata and versions
    def cluster(self, topics: Sequence[str] | None = None) -> ClusterView:
        raise NotSupported(f"{self.name} offers no metadata")

    def api_versions(self) -> dict[int, tuple[int, int]]:
        raise NotSupported("ApiVersions is not exposed by this client")

    # -- produce
    def producer(self, *, acks: int = -1, compression: str = "none", idempotent: bool = False,
                 max_request_size: int | None = None, timeout_s: float | None = None) -> ProducerHandle:
        """A producer that stays open across sends (its metadata can go stale, as a real app's does)."""
        raise NotSupported(f"{self.name} offers no long-lived producer")

    def produce(
        self,
        topic: str,
        records: Sequence[Record],
        *,
        acks: int = -1,
        compression: str = "none",
        idempotent: bool = False,
        max_request_size: int | None = None,
        timeout_s: float | None = None,
    ) -> list[tuple[int, int]]:
        """Produce with a fresh producer and wait for delivery; (partition, offset) per record.

        Raises ProduceFailed(error_name) when any record is rejected, TimeoutError when delivery
        does not complete within timeout_s (default: the adapter's timeout).
        """
        producer = self.producer(acks=acks, compression=compression, idempotent=idempotent,
                                 max_request_size=max_request_size, timeout_s=timeout_s)
        try:
            return producer.send(topic, records)
        finally:
            producer.close()

    def transactional_producer(self, transactional_id: str, *, timeout_s: float | None = None
                               ) -> TransactionalProducerHandle:
        """A producer with this transactional.id (acks=all, idempotent, as every transactional producer is)."""
        raise NotSupported(f"{self.name} offers no transactional producer")

    # -- consume
    def consumer(
        self,
        *,
        group_id: str | None = None,
        subscribe: Sequence[str] = (),
        assign: Sequence[TopicPartition] = (),
        group_instance_id: str | None = None,
        auto_offset_reset: str = "earliest",
        allow_auto_create_topics: bool = False,
        isolation_level: str | None = None,
        group_protocol: str = "classic",
    ) -> ConsumerHandle:
        """isolation_level: "read_committed" or "read_uncommitted"; None keeps the client's default (librdkafka's is
        read_committed, the Java client's, kafka-python's and aiokafka's read_uncommitted). group_protocol:
        "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848, ConsumerGroupHeartbeat); adapters whose client
        cannot speak KIP-848 raise NotSupported for "consumer"."""
        raise NotSupported(f"{self.name} offers no consumer")

    def share_consumer(self, *, group_id: str, subscribe: Sequence[str]) -> ConsumerHandle:
        """A KIP-932 share-group member (records acknowledged implicitly, as the client's default): only
        `poll` and `close` are used."""
        raise NotSupported(f"{self.name} offers no share consumer (KIP-932)")

    def list_offsets(self, tps: Sequence[TopicPartition], spec: str | int) -> Offsets:
        """spec: 'earliest', 'latest' or a timestamp in ms (first offset with timestamp >= it, -1 if none)."""
        raise NotSupported(f"{self.name} offers no ListOffsets")

    # -- admin
    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        raise NotSupported(f"{self.name} offers no CreateTopics")

    def delete_topic(self, name: str) -> None:
        raise NotSupported(f"{self.name} offers no DeleteTopics")

    def create_partitions(self, name: str, total: int) -> None:
        raise NotSupported(f"{self.name} offers no CreatePartitions")

    def describe_configs(self, resource_type: str, name: str) -> dict[str, str]:
        """resource_type 'topic' or 'broker'; returns every config name -> value the broker reports."""
        raise NotSupported(f"{self.name} offers no DescribeConfigs")

    def alter_topic_config(self, name: str, configs: dict[str, str]) -> None:
        raise NotSupported(f"{self.name} offers no AlterConfigs")

    def describe_cluster(self) -> ClusterView:
        raise NotSupported(f"{self.name} offers no DescribeCluster")

    def delete_records(self, offsets: Offsets) -> Offsets:
        """Returns the new low watermark per partition."""
        raise NotSupported(f"{self.name} offers no DeleteRecords")

    def describe_log_dirs(self) -> dict[str, dict[TopicPartition, int]]:
        """DescribeLogDirs of every broker: log dir path -> partition -> size in bytes."""
        raise NotSupported(f"{self.name} offers no DescribeLogDirs")

    def list_reassignments(self, tps: Sequence[TopicPartition] | None = None
                           ) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
        """ListPartitionReassignments: partition -> (replicas, adding replicas, removing replicas)."""
        raise NotSupported(f"{self.name} offers no ListPartitionReassignments")

    def alter_reassignments(self, targets: dict[TopicPartition, list[int] | None]) -> dict[TopicPartition, str | None]:
        """AlterPartitionReassignments (None cancels): partition -> None if accepted, else Kafka's error name."""
        raise NotSupported(f"{self.name} offers no AlterPartitionReassignments")

    def list_groups(self) -> set[str]:
        raise NotSupported(f"{self.name} offers no ListGroups")

    def describe_group(self, group_id: str) -> GroupDescription:
        raise NotSupported(f"{self.name} offers no DescribeGroups")

    def delete_group(self, group_id: str) -> None:
        raise NotSupported(f"{self.name} offers no DeleteGroups")

    def close(self) -> None:
        pass
