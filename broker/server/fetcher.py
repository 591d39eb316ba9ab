"""Replica fetchers: followers copy their leaders' logs (Kafka's ReplicaFetcherManager /
AbstractFetcherThread / ReplicaFetcherThread, one asyncio task per source broker).

Per partition the fetcher first *truncates*, then *fetches*:
- Truncation (KIP-101/KIP-279): ask the leader `OffsetForLeaderEpoch` for our latest leader epoch; if the
  leader knows it, truncate to min(its end offset for that epoch, our LEO); if the leader only knows an
  earlier epoch, truncate to our own end offset of *that* epoch and ask again; only when the leader
  answers no epoch at all, or we have none to ask about, do we fall back to the high watermark. Never
  blindly to the HW.
- Fetching: Fetch with our replica id and `last_fetched_epoch`, in an incremental fetch session (KIP-227, as
  Kafka's follower does): after the first full fetch each request names only the partitions whose fetch
  state changed and forgets those no longer fetched, and the leader answers only partitions with news; a
  session error (or a lost connection) starts a new session with a full fetch. Batches are appended as they are
  (offsets and epochs assigned by the leader), our HW becomes min(LEO, leader's HW), our log start
  offset follows the leader's. A diverging epoch in the answer truncates to where our logs agree.
Every change to the local log goes through `Partition` (append, truncation, log start, HW).
- Errors: OFFSET_OUT_OF_RANGE (our offset past the leader's LEO: truncate to it; below its log start:
  restart our log at its log start), FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER / UNKNOWN_LEADER_EPOCH
  (the partition waits for the controller's next LeaderAndIsr), connection failures (back off
  `replica.fetch.backoff.ms` and retry).
The leader is reached through `LeaderEndPoint` so tests can put a fake leader behind it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from broker.common.metadata_version import MetadataVersion, request_versions
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.security.client import PLAINTEXT_CLIENT, ClientSecurity
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from storage import InvalidRecordError as StorageInvalidRecordError
from storage import KafkaStorageError, TopicPartition

if TYPE_CHECKING:
    from broker.cluster.partition import Partition
    from broker.config.kafka_config import KafkaConfig
    from broker.metadata.metadata_cache import MetadataCache
    from broker.server.replica_manager import ReplicaManager

log = logging.getLogger("broker.fetcher")


@dataclass
class FetchState:
    partition: Partition
    leader_epoch: int
    truncating: bool = True
    delayed_until: float = 0.0


_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH)


class FetchSessionHandler:
    """The fetching side of an incremental fetch session (KIP-227; Kafka's FetchSessionHandler).

    `next_request(wanted)` takes every partition to fetch with its fetch state and says what the request carries:
    all of them in a full request (epoch 0: open a session, closing ours if any), or only the changed ones plus
    the forgotten ones in an incremental request. `on_response` moves the epoch on when the request was
    answered, or starts over with a full request after an error."""

    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = 0  # 0: the next request is full and opens a session
        self._sent: dict[TopicPartition, tuple] = {}  # what the session holds, as last sent
        self._pending: dict[TopicPartition, tuple] = {}

    def next_request(self, wanted: dict[TopicPartition, tuple]) -> tuple[int, int, list[TopicPartition],
                                                                          list[TopicPartition]]:
        self._pending = dict(wanted)
        if self.epoch == 0:
            return self.session_id, 0, list(wanted), []
        send = [tp for tp, state in wanted.items() if self._sent.get(tp) != state]
        forget = [tp for tp in self._sent if tp not in wanted]
        return self.session_id, self.epoch, send, forget

    def on_response(self, error_code: int, session_id: int) -> None:
        if error_code != ErrorCode.NONE:
            self.reset()
            return
        if self.epoch == 0:
            self.session_id = session_id
            # Without a session (the leader's cache is full, or it gives none) every request stays full.
            self.epoch = 1 if session_id else 0
        else:
            self.epoch = 1 if self.epoch >= 2**31 - 1 else self.epoch + 1
        self._sent = self._pending

    def unexpected(self, answered: list[TopicPartition]) -> list[TopicPartition]:
        """Partitions an answer names that the session does not hold (Kafka's FetchSessionHandler refuses such
        an answer and starts over with a full request: the leader's session went astray)."""
        return [tp for tp in answered if tp not in self._pending]

    def resend(self, tp: TopicPartition) -> None:
        """Name `tp` in the next request even if its fetch state did not change."""
        self._sent.pop(tp, None)

    def reset(self) -> None:
        """The next request is full; with our old session id it also closes that session on the leader."""
        self.epoch = 0
        self._sent = {}


class LeaderEndPoint(Protocol):
    async def fetch(self, build: Any) -> Any: ...
    async def offsets_for_leader_epoch(self, build: Any) -> Any: ...
    async def list_offsets(self, build: Any) -> Any: ...
    def close(self) -> None: ...


class RemoteLeaderEndPoint:
    def __init__(self, host: str, port: int, client_id: str, timeout_s: float,
                 version_caps: dict[int, int] | None = None, security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.conn = BrokerConnection(host, port, client_id, timeout_s=timeout_s, version_caps=version_caps,
                                     security=security)

    async def fetch(self, build: Any) -> Any:
        return await self.conn.send(build, ApiKey.FETCH)

    async def offsets_for_leader_epoch(self, build: Any) -> Any:
        return await self.conn.send(build, ApiKey.OFFSET_FOR_LEADER_EPOCH)

    async def list_offsets(self, build: Any) -> Any:
        return await self.conn.send(build, ApiKey.LIST_OFFSETS)

    def close(self) -> None:
        self.conn.close()


class FetcherServer(Protocol):
    """The broker as its replica fetchers see it (KafkaServer): its id and broker epoch, its config and inter-broker
    security, the metadata cache (where the leaders are), the replica manager whose partitions they fill, and its
    controller (a KRaft broker's metadata image says which request versions the cluster speaks)."""

    broker_id: int
    config: KafkaConfig
    inter_broker_security: ClientSecurity
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    controller: Any  # broker.controller.Controller, or broker.kraft.broker_server.KRaftBroker: rooms above this one

    @property
    def broker_epoch(self) -> int: ...


class ReplicaFetcher:
    def __init__(self, server: FetcherServer, leader_id: int, endpoint: LeaderEndPoint) -> None:
        self.server = server
        self.broker_id = server.broker_id
        self.leader_id = leader_id
        self.endpoint = endpoint
        self.partitions: dict[TopicPartition, FetchState] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._unwritten: list = []  # (log, offset, rollbacks) appended by the last response, not yet written
        self.session = FetchSessionHandler()
        self._topic_ids: dict[str, Any] = {}  # the id each topic was last fetched by (for forgetting it)
        cfg = server.config
        self.max_wait_ms = cfg["replica.fetch.wait.max.ms"]
        self.min_bytes = cfg["replica.fetch.min.bytes"]
        self.max_bytes = cfg["replica.fetch.response.max.bytes"]
        self.partition_max_bytes = cfg["replica.fetch.max.bytes"]
        self.backoff_s = cfg["replica.fetch.backoff.ms"] / 1000

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self.endpoint.close()

    def add(self, partition: Partition) -> None:
        self.partitions[partition.topic_partition] = FetchState(partition, partition.leader_epoch)
        self._wakeup.set()

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        failing = False  # log a connection problem once per outage, not once per retry
        while True:
            if not self.partitions:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            try:
                if any(s.truncating for s in self.partitions.values()):
                    await self._truncate()
                ready = {tp: s for tp, s in self.partitions.items()
                         if not s.truncating and s.delayed_until <= loop.time()}
                if not ready:
                    await asyncio.sleep(self.backoff_s)
                    continue
                await self._fetch(ready)
                if failing:
                    log.info("fetcher from broker %d: connected again", self.leader_id)
                    failing = False
            except asyncio.CancelledError:
                raise
            except BrokerUnavailable as e:
                if not failing:
                    log.warning("fetcher from broker %d: %s; retrying every %.1fs", self.leader_id, e,
                                self.backoff_s)
                    failing = True
                await asyncio.sleep(self.backoff_s)
            except Exception:
                log.exception("fetcher from broker %d failed; retrying", self.leader_id)
                await asyncio.sleep(self.backoff_s)

    # ---- truncation by leader epoch
    async def _truncate(self) -> None:
        states = {tp: s for tp, s in self.partitions.items() if s.truncating}
        Req = request_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
        asked: dict[TopicPartition, int] = {}
        by_topic: dict[str, list] = {}
        for tp, s in states.items():
            partition = s.partition
            latest = partition.latest_epoch()
            if latest is None:
                # No epochs to compare (an empty log, or records from before leader epochs): Kafka's
                # truncateToHighWatermark, the one case where the HW is the truncation point.
                if partition.high_watermark < partition.log_end_offset:
                    log.info("%s: no leader epochs; truncating from log end offset %d to the high watermark %d",
                             tp, partition.log_end_offset, partition.high_watermark)
                    partition.truncate_to(partition.high_watermark)
                s.truncating = False
                continue
            asked[tp] = latest
            by_topic.setdefault(tp.topic, []).append((tp.partition, s.leader_epoch, latest))
        if not by_topic:
            return

        def build(v: int) -> Any:
            T = Req.OffsetForLeaderTopic
            return Req[v](replica_id=self.broker_id, topics=[
                T(topic=t, partitions=[T.OffsetForLeaderPartition(partition=p, current_leader_epoch=cur,
                                                                   leader_epoch=ep) for p, cur, ep in ps])
                for t, ps in by_topic.items()])

        resp = await self.endpoint.offsets_for_leader_epoch(build)
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition)
                s = states.get(tp)
                if s is None or tp not in self.partitions or tp not in asked:
                    continue
                if p.error_code != ErrorCode.NONE:
                    self._on_partition_error(tp, s, ErrorCode(p.error_code))
                    continue
                self._apply_truncation(tp, s, asked[tp], p.leader_epoch, p.end_offset)

    def _apply_truncation(self, tp: TopicPartition, s: FetchState, asked_epoch: int, leader_epoch: int,
                          leader_end: int) -> None:
        partition = s.partition
        leo = partition.log_end_offset
        done = True
        if leader_end < 0:
            target = partition.high_watermark  # the leader knows no epochs at all: Kafka's fallback
        elif leader_epoch < 0:
            target = min(leader_end, leo)
        else:
            epoch, our_end = partition.last_offset_for_leader_epoch(-1, leader_epoch, fetch_only_from_leader=False)
            if epoch < 0:
                target = min(leader_end, leo)
            elif epoch != leader_epoch:
                target = min(our_end, leo)
                done = False  # we ended that epoch elsewhere: ask again with our now-latest epoch
            else:
                target = min(leader_end, our_end, leo)
        if target < leo:
            log.info("%s: truncating from log end offset %d to %d (leader %d: epoch %d ends at %d; we asked "
                     "for epoch %d)", tp, leo, target, self.leader_id, leader_epoch, leader_end, asked_epoch)
        # Even with nothing to cut from the log, an epoch we started as leader without appending anything
        # may sit at our LEO and conflict with the leader's: the truncation drops it from the epoch cache
        # (as Kafka's does), which is also what lets an unfinished truncation ask again with an older epoch.
        partition.truncate_to(target)
        s.truncating = not done

    def _on_partition_error(self, tp: TopicPartition, s: FetchState, error: ErrorCode) -> None:
        loop = asyncio.get_running_loop()
        if error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                     ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            # Our view or the leader's is behind; the controller's next LeaderAndIsr settles it.
            log.info("%s: leader %d answered %s; backing off", tp, self.leader_id, error.name)
        else:
            log.warning("%s: fetch from leader %d failed: %s", tp, self.leader_id, error.name)
        s.delayed_until = loop.time() + self.backoff_s

    # ---- fetching
    async def _fetch(self, ready: dict[TopicPartition, FetchState]) -> None:
        Req = request_class(ApiKey.FETCH)
        cache = self.server.metadata_cache
        offsets = {tp: s.partition.log_end_offset for tp, s in ready.items()}
        fetch_states: dict[TopicPartition, tuple] = {}
        # Topic ids as LeaderAndIsr gave them to the partition: the metadata cache may learn them later
        # (UpdateMetadata follows LeaderAndIsr), and a fetch by an unknown id is answered for an id we cannot map.
        topic_ids = {tp.topic: s.partition.topic_id or cache.topic_id(tp.topic) for tp, s in ready.items()}
        topic_names = {tid: name for name, tid in topic_ids.items() if tid is not None}
        for tp, s in ready.items():
            last_epoch = s.partition.latest_epoch()
            fetch_states[tp] = (offsets[tp], s.leader_epoch, last_epoch if last_epoch is not None else -1,
                                s.partition.log_start_offset, self.partition_max_bytes)
        unnamed: list[TopicPartition] = []

        def build(v: int) -> Any:
            T = Req.FetchTopic
            wanted = fetch_states
            if v >= 13:
                # No id yet: such a partition cannot be named; it waits for its id like a delayed partition.
                wanted = {tp: st for tp, st in fetch_states.items() if topic_ids[tp.topic] is not None}
                unnamed[:] = [tp for tp in fetch_states if tp not in wanted]
            if v >= 7:
                session_id, epoch, send, forget = self.session.next_request(wanted)
            else:
                session_id, epoch, send, forget = 0, -1, list(wanted), []
            by_topic: dict[str, list[Any]] = {}
            for tp in send:
                offset, leader_epoch, last_epoch, log_start, max_bytes = fetch_states[tp]
                by_topic.setdefault(tp.topic, []).append(T.FetchPartition(
                    partition=tp.partition, current_leader_epoch=leader_epoch, fetch_offset=offset,
                    last_fetched_epoch=last_epoch, log_start_offset=log_start, partition_max_bytes=max_bytes))
            topics = [T(topic=topic, topic_id=topic_ids[topic], partitions=parts) for topic, parts in by_topic.items()]
            forgotten_by_topic: dict[str, list[int]] = {}
            for tp in forget:
                forgotten_by_topic.setdefault(tp.topic, []).append(tp.partition)
            forgotten = [Req.ForgottenTopic(topic=topic, topic_id=self._topic_ids.get(topic), partitions=parts)
                         for topic, parts in forgotten_by_topic.items()]
            fields: dict[str, Any] = dict(max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes,
                                          max_bytes=self.max_bytes, isolation_level=0, session_id=session_id,
                                          session_epoch=epoch, topics=topics, forgotten_topics_data=forgotten,
                                          rack_id="")
            if v >= 15:
                # KRaft brokers send their broker epoch (Kafka 3.7+, KIP-903); ZooKeeper-mode ones -1.
                epoch = self.server.broker_epoch if self.server.config.is_kraft else -1
                fields["replica_state"] = Req.ReplicaState(replica_id=self.broker_id, replica_epoch=epoch)
                fields["replica_id"] = -1
            else:
                fields["replica_id"] = self.broker_id
            return Req[v](**fields)

        # Ids of topics sent in the session, so one forgotten later (no longer fetched, not in `topic_ids`) can be
        # named by the id it was fetched with.
        self._topic_ids.update((name, tid) for name, tid in topic_ids.items() if tid is not None)
        try:
            resp = await self.endpoint.fetch(build)
        except BrokerUnavailable:
            self.session.reset()  # a new connection: the leader may have dropped the session
            raise
        for tp in unnamed:
            log.info("%s: no topic id known yet; fetching it once its id arrives", tp)
            ready[tp].delayed_until = asyncio.get_running_loop().time() + self.backoff_s
        if resp.API_VERSION >= 7:  # a request in the session
            self.session.on_response(resp.error_code, resp.session_id)
            if resp.error_code in _SESSION_ERRORS:
                log.info("fetcher from broker %d: %s; starting a new fetch session", self.leader_id,
                         ErrorCode(resp.error_code).name)
                return
        if resp.API_VERSION >= 7 and resp.error_code != ErrorCode.NONE:
            raise BrokerUnavailable(f"fetch failed: {ErrorCode(resp.error_code).name}")
        # Named by the topic ids this request used (the topics of v13+ answers are ids only).
        answered = [(TopicPartition((t.topic if resp.API_VERSION < 13 else topic_names.get(t.topic_id)) or "",
                                    p.partition_index), p) for t in resp.responses for p in t.partitions]
        if resp.API_VERSION >= 7 and (stray := self.session.unexpected([tp for tp, _ in answered])):
            log.warning("fetcher from broker %d: the answer names partitions not in our fetch session (%s); "
                        "starting a new session", self.leader_id, ", ".join(map(str, stray[:3])))
            self.session.reset()
        for tp, p in answered:
            s = self.partitions.get(tp)
            if s is None or s is not ready.get(tp) or s.partition.log is None:
                continue  # removed or replaced while the fetch was in flight
            if s.partition.log_end_offset != offsets[tp]:
                continue  # truncated meanwhile
            self._process_partition(tp, s, p, resp.API_VERSION)
        if self._unwritten:
            # The next fetch asks from our log end offset, which moves once the writer has written what this
            # response brought (as Kafka's fetcher thread appends before it fetches again).
            unwritten, self._unwritten = self._unwritten, []
            writes = self.server.replica_manager.log_writes
            for ok, (log_, _, _) in zip(await writes.wait_written(unwritten), unwritten, strict=True):
                if not ok:
                    log.info("%s: fetched data was cut from the log before it was written (a failed write or a "
                             "truncation); fetching from the log end offset again", log_.topic_partition)

    def _process_partition(self, tp: TopicPartition, s: FetchState, p: Any, version: int) -> None:
        error = ErrorCode(p.error_code)
        partition = s.partition
        div = getattr(p, "diverging_epoch", None) if version >= 12 else None
        if error != ErrorCode.NONE or (div is not None and div.epoch >= 0):
            # The leader's session may not hold this partition as we last sent it (a topic id it did not know
            # yet is left out of the session): name it again in the next request.
            self.session.resend(tp)
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            self._handle_out_of_range(tp, s, p)
            return
        if error != ErrorCode.NONE:
            self._on_partition_error(tp, s, error)
            return
        if div is not None and div.epoch >= 0 and div.end_offset >= 0:
            s.truncating = False
            self._apply_truncation(tp, s, -1, div.epoch, div.end_offset)
            return
        records = p.records
        if records:
            try:
                info = partition.append_records_to_follower(memoryview(records))
            except (StorageInvalidRecordError, KafkaStorageError) as e:
                log.error("%s: cannot append fetched data at %d: %s", tp, partition.log_end_offset, e)
                s.delayed_until = asyncio.get_running_loop().time() + self.backoff_s
                return
            if self.server.metrics is not None:  # Kafka's ReplicationBytesInPerSec
                self.server.metrics.replication_bytes_in += len(records)
            writes = self.server.replica_manager.log_writes
            pending = writes.unwritten(partition.log, info.last_offset + 1) if writes and info.records_count else None
            if pending is not None:
                self._unwritten.append(pending)
            flush = self.server.replica_manager.on_flush_needed
            if info.records_count and flush is not None and partition.log.needs_flush():  # type: ignore[union-attr]
                flush(partition)
        if partition.update_follower_high_watermark(p.high_watermark):
            # Consumers fetching from this follower (KIP-392) may be waiting for the HW.
            self.server.replica_manager.fetch_purgatory.check_and_complete(tp)
        partition.follow_leader_log_start_offset(p.log_start_offset)

    def _handle_out_of_range(self, tp: TopicPartition, s: FetchState, p: Any) -> None:
        partition = s.partition
        leader_start = p.log_start_offset
        leo = partition.log_end_offset
        if leader_start >= 0 and leo < leader_start:
            log.info("%s: our log end offset %d is below the leader's log start offset %d: restarting there",
                     tp, leo, leader_start)
            partition.truncate_fully_and_start_at(leader_start)
        else:
            # Past the leader's end: go back through epoch-based truncation.
            s.truncating = True


class ReplicaFetcherManager:
    def __init__(self, server: FetcherServer) -> None:
        self.server = server
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.assignment: dict[TopicPartition, int] = {}

    def add_fetchers(self, partitions: dict[TopicPartition, Partition]) -> None:
        for tp, partition in partitions.items():
            leader = partition.leader_id
            if leader is None or leader < 0 or leader == self.server.broker_id:
                continue
            fetcher = self.fetchers.get(leader)
            if fetcher is None:
                ep = self.server.metadata_cache.alive_broker(leader)
                if ep is None:
                    log.warning("%s: leader %d has no known endpoint yet", tp, leader)
                    continue
                endpoint = RemoteLeaderEndPoint(
                    ep.host, ep.port, f"replica-fetcher-{self.server.broker_id}",
                    self.server.config["replica.socket.timeout.ms"] / 1000,
                    request_versions(self._inter_broker_version()), self.server.inter_broker_security)
                fetcher = ReplicaFetcher(self.server, leader, endpoint)
                self.fetchers[leader] = fetcher
                fetcher.start()
            fetcher.add(partition)
            self.assignment[tp] = leader
            log.info("%s: fetching from leader %d at epoch %d from offset %d", tp, leader, partition.leader_epoch,
                     partition.log_end_offset)

    def _inter_broker_version(self) -> MetadataVersion:
        """What caps Fetch, OffsetForLeaderEpoch and ListOffsets: the cluster's metadata.version on a KRaft broker
        (Kafka ignores inter.broker.protocol.version there), inter.broker.protocol.version in ZooKeeper mode
        (below 3.1 Fetch names topics, so a cluster without topic ids still replicates)."""
        loader = getattr(self.server.controller, "loader", None)
        level = loader.image.features.metadata_version if loader is not None else None
        if level is None:
            return self.server.config.inter_broker_protocol_version
        return MetadataVersion.from_feature_level(level)

    def remove_fetchers(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            leader = self.assignment.pop(tp, None)
            if leader is not None and leader in self.fetchers:
                self.fetchers[leader].remove(tp)

    async def shutdown(self) -> None:
        for f in list(self.fetchers.values()):
            await f.stop()
        self.fetchers.clear()
