"""DescribeTopicPartitions over a socket: paging by cursor under the partition limit, topic order, every topic
when none is named, and the partitions' replicas."""

from __future__ import annotations

import socket
from typing import Any

from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip

Req = request_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS)


def describe(port: int, names: list[str], limit: int, cursor: tuple[str, int] | None = None) -> Any:
    request = Req[0](topics=[Req.TopicRequest(name=n) for n in names], response_partition_limit=limit,
                     cursor=None if cursor is None else Req.Cursor(topic_name=cursor[0], partition_index=cursor[1]))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        return roundtrip(sock, request, 1)


def pages(port: int, names: list[str], limit: int) -> list[list[tuple[str, int]]]:
    """Every answer of a paged walk: the (topic, partition) pairs of each, until no cursor is left."""
    out: list[list[tuple[str, int]]] = []
    cursor = None
    while True:
        response = describe(port, names, limit, cursor)
        assert all(t.error_code == ErrorCode.NONE for t in response.topics), response
        out.append([(t.name, p.partition_index) for t in response.topics for p in t.partitions])
        if response.next_cursor is None:
            return out
        cursor = (response.next_cursor.topic_name, response.next_cursor.partition_index)
        assert len(out) < 20


def test_partitions_are_paged_by_cursor_in_topic_order(broker_factory: Any) -> None:
    b: EmbeddedBroker = broker_factory({"auto.create.topics.enable": "false"})
    from kafka.admin import KafkaAdminClient, NewTopic
    admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    admin.create_topics([NewTopic("dtp-b", 2, 1), NewTopic("dtp-a", 3, 1), NewTopic("dtp-c", 1, 1)])
    admin.close()
    everything = [("dtp-a", 0), ("dtp-a", 1), ("dtp-a", 2), ("dtp-b", 0), ("dtp-b", 1), ("dtp-c", 0)]
    # Named topics, any order in the request: answered in name order, two partitions at a time.
    walked = pages(b.port, ["dtp-c", "dtp-a", "dtp-b"], 2)
    assert walked == [everything[0:2], everything[2:4], everything[4:6]]
    # A limit that ends exactly at a topic's end: the next page starts at the next topic's partition 0.
    assert pages(b.port, ["dtp-a", "dtp-b", "dtp-c"], 3) == [everything[0:3], everything[3:6]]
    # No topic named: every topic, from the cursor on.
    first = describe(b.port, [], 2000)
    assert [(t.name, len(t.partitions)) for t in first.topics if t.name.startswith("dtp-")] == [
        ("dtp-a", 3), ("dtp-b", 2), ("dtp-c", 1)]
    resumed = describe(b.port, [], 2000, cursor=("dtp-b", 1))
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in resumed.topics] == [
        ("dtp-b", [1]), ("dtp-c", [0])]
    partition = first.topics[0].partitions[0]
    node = partition.leader_id
    assert node >= 0 and (partition.replica_nodes, partition.isr_nodes, partition.eligible_leader_replicas,
                          partition.last_known_elr, partition.offline_replicas) == ([node], [node], [], [], [])
    # A partition limit of 0 still answers one partition, as Kafka's (at least 1).
    assert [len(t.partitions) for t in describe(b.port, ["dtp-a"], 0).topics] == [1]
