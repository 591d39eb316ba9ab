"""The replica fetcher (`ReplicaFetcher`) without sockets: truncation by leader epoch (KIP-101 / KIP-279),
a diverging epoch in a fetch answer (KIP-320), and out-of-range answers.

The follower side is a real (unstarted) `KafkaServer` with a real partition and log. The leader is a
leader-side ReplicaManager reached through the fetcher's seam, `LeaderEndPoint`: its OffsetForLeaderEpoch
and Fetch answers come from the broker's real request handlers, through the protocol codec (see
`replication.HandlerLeader`).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.cluster.partition import Partition, PartitionState
from broker.config.kafka_config import KafkaConfig
from broker.kafka_server import KafkaServer
from broker.metadata.metadata_cache import PartitionMetadata
from broker.server.fetcher import ReplicaFetcher
from broker.server.replica_manager import ReplicaManager
from protocol.errors import ErrorCode
from protocol.records import build_batch, iter_batches
from storage import Log, LogConfig

from .replication import TOPIC_ID, TP, HandlerLeader, lead, records, replica_manager


def make_log(path: Path, epochs: list[tuple[int, int]], log_end_offset: int) -> Log:
    """A log whose records from each (epoch, start) entry to the next were written under that epoch."""
    log_ = Log.open(path, LogConfig())
    bounds = [start for _, start in epochs[1:]] + [log_end_offset]
    for (epoch, start), end in zip(epochs, bounds, strict=True):
        for offset in range(start, end):
            log_.append_as_follower(bytearray(build_batch([(b"k", b"e%d-o%d" % (epoch, offset), [], 0)],
                                                          base_offset=offset, partition_leader_epoch=epoch)))
    assert log_.leader_epoch_cache.entries() == epochs and log_.log_end_offset == log_end_offset
    return log_


def epoch_leader(tmp_path: Path, epochs: list[tuple[int, int]], log_end_offset: int,
                 current_epoch: int) -> tuple[HandlerLeader, ReplicaManager]:
    """Broker 0 leads at `current_epoch` a log written under `epochs`; like any new leader it starts its
    epoch at its log end offset (Partition.make_leader)."""
    make_log(tmp_path / "leader" / "t-0", epochs, log_end_offset).close()
    rm = replica_manager(tmp_path / "leader", 0)
    lead(rm, current_epoch, isr=[0, 1], replicas=[0, 1])
    return HandlerLeader(rm), rm


def follower(tmp_path: Path, log_: Log, leader_epoch: int, high_watermark: int = 0) -> tuple[KafkaServer, Partition]:
    server = KafkaServer(KafkaConfig({"broker.id": "1", "log.dirs": str(tmp_path / "follower-server"),
                                      "replica.fetch.wait.max.ms": "0"}))
    server.metadata_cache.update_partition(TP.topic, TOPIC_ID, PartitionMetadata(TP.partition, 0, leader_epoch,
                                                                                 (0, 1), (0, 1)))
    partition = Partition(TP, 1, replica_lag_time_max_ms=10000)
    partition.set_log(log_, high_watermark)
    partition.make_follower(PartitionState(leader=0, leader_epoch=leader_epoch, isr=[0, 1], replicas=[0, 1]))
    return server, partition


def truncate(server: KafkaServer, partition: Partition, leader: HandlerLeader) -> int:
    """Run the fetcher's truncation phase to completion; returns the number of OffsetsForLeaderEpoch rounds."""

    async def run() -> int:
        fetcher = ReplicaFetcher(server, 0, leader)
        fetcher.add(partition)
        rounds = 0
        while fetcher.partitions[TP].truncating:
            rounds += 1
            assert rounds <= 10, "truncation does not converge"
            await fetcher._truncate()
        return rounds

    return asyncio.run(run())


def replicate(server: KafkaServer, partition: Partition, leader: HandlerLeader, *, truncating: bool = True,
              until: Callable[[], bool]) -> None:
    """The fetcher's loop, one truncation or fetch round at a time (no back-off sleeps), until `until()`."""

    async def run() -> None:
        fetcher = ReplicaFetcher(server, 0, leader)
        fetcher.add(partition)
        fetcher.partitions[TP].truncating = truncating
        for _ in range(20):
            state = fetcher.partitions[TP]
            if state.truncating:
                await fetcher._truncate()
            else:
                await fetcher._fetch({TP: state})
            if until():
                return
        raise AssertionError("the follower does not converge")

    asyncio.run(run())


def values(log_: Log) -> list[bytes | None]:
    data = _read_all(log_)
    return [r.value for batch in iter_batches(data) for r in batch.records()]


def _read_all(log_: Log) -> bytes:
    out = b""
    offset = log_.log_start_offset
    while offset < log_.log_end_offset:
        info = log_.read(offset, 1 << 20, max_offset=log_.log_end_offset)
        if info.records is None or info.records.length == 0:
            break
        chunk = os.pread(info.records.fileno, info.records.length, info.records.position)
        out += chunk
        offset = max(b.last_offset for b in iter_batches(chunk)) + 1
    return out


def test_kip_279_follower_with_epochs_the_leader_never_had(tmp_path: Path) -> None:
    # The follower led epochs 2 and 4 briefly; the new leader only knows 0, 1 and 3.
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (2, 5), (4, 8)], 10)
    leader, _ = epoch_leader(tmp_path, [(0, 0), (1, 5), (3, 7)], 12, 5)
    server, partition = follower(tmp_path, follower_log, leader_epoch=5)
    rounds = truncate(server, partition, leader)
    assert leader.asked_epochs == [4, 2, 0]  # each round asks with the follower's now-latest epoch
    assert rounds == 3
    assert follower_log.log_end_offset == 5  # the common prefix: epoch 0, offsets 0..4
    assert follower_log.leader_epoch_cache.entries() == [(0, 0)]
    assert values(follower_log) == [b"e0-o%d" % i for i in range(5)]


def test_kip_101_longer_follower_log_truncates_to_the_end_of_its_epoch_on_the_leader(tmp_path: Path) -> None:
    # Same epochs; the follower has 4 records of epoch 1 the leader lost (it ends epoch 1 at 7).
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (1, 5)], 11)
    leader, _ = epoch_leader(tmp_path, [(0, 0), (1, 5), (2, 7)], 9, 2)
    server, partition = follower(tmp_path, follower_log, leader_epoch=2, high_watermark=3)
    assert truncate(server, partition, leader) == 1
    assert follower_log.log_end_offset == 7  # not the HW (3): committed records stay
    assert follower_log.leader_epoch_cache.entries() == [(0, 0), (1, 5)]


def test_shorter_follower_log_keeps_everything(tmp_path: Path) -> None:
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (1, 5)], 6)
    leader, _ = epoch_leader(tmp_path, [(0, 0), (1, 5)], 20, 1)
    server, partition = follower(tmp_path, follower_log, leader_epoch=1, high_watermark=2)
    assert truncate(server, partition, leader) == 1
    assert follower_log.log_end_offset == 6


def test_empty_epoch_entry_at_the_log_end_is_dropped(tmp_path: Path) -> None:
    # The follower became leader of epoch 3 at offset 6 but appended nothing before losing leadership.
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (1, 5)], 6)
    follower_log.leader_epoch_cache.assign(3, 6)
    leader, _ = epoch_leader(tmp_path, [(0, 0), (1, 5), (2, 6)], 9, 4)
    server, partition = follower(tmp_path, follower_log, leader_epoch=4)
    truncate(server, partition, leader)
    assert follower_log.log_end_offset == 6
    assert follower_log.leader_epoch_cache.entries() == [(0, 0), (1, 5)]


def test_no_epochs_falls_back_to_the_high_watermark(tmp_path: Path) -> None:
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    for offset in range(8):  # records from before leader epochs (partition leader epoch -1)
        follower_log.append_as_follower(bytearray(build_batch([(b"k", b"v", [], 0)], base_offset=offset)))
    assert follower_log.leader_epoch_cache.latest_epoch() is None
    leader, _ = epoch_leader(tmp_path, [(0, 0)], 20, 1)
    server, partition = follower(tmp_path, follower_log, leader_epoch=1, high_watermark=5)
    truncate(server, partition, leader)
    assert leader.asked_epochs == []
    assert follower_log.log_end_offset == 5


def test_diverging_epoch_in_a_fetch_answer_truncates_to_where_the_logs_agree(tmp_path: Path) -> None:
    # The follower fetches with last_fetched_epoch 2 from offset 10; the leader never had epoch 2 and
    # answers epoch 1 ends at 7 (KIP-320): the follower truncates to its own end of the epochs both
    # know, asks OffsetForLeaderEpoch about the rest, and then copies the leader's log.
    follower_log = make_log(tmp_path / "f" / "t-0", [(0, 0), (2, 5)], 10)
    leader, leader_rm = epoch_leader(tmp_path, [(0, 0), (1, 5), (3, 7)], 12, 5)
    server, partition = follower(tmp_path, follower_log, leader_epoch=5)
    leader_partition = leader_rm.partitions[TP]
    leader_log = leader_partition.log
    assert leader_log is not None
    replicate(server, partition, leader, truncating=False, until=lambda: True)  # one fetch
    assert follower_log.log_end_offset == 5 and leader.asked_epochs == []
    # A diverged fetch is no position: the leader's HW did not move to the follower's offset 10.
    assert leader_partition.high_watermark == 0
    replicate(server, partition, leader, truncating=True,
              until=lambda: follower_log.log_end_offset == leader_log.log_end_offset)
    assert leader.asked_epochs == [0]  # after the diverging answer, epoch 0 (ends at 5 on both)
    assert values(follower_log) == values(leader_log)
    assert follower_log.leader_epoch_cache.entries() == [(0, 0), (1, 5), (3, 7)]


def test_out_of_range_below_the_leaders_log_start_restarts_the_follower_there(tmp_path: Path) -> None:
    leader_rm = replica_manager(tmp_path / "leader", 0)
    leader_partition = lead(leader_rm, 1, isr=[0], replicas=[0, 1])
    for i in range(10):
        leader_rm.append_records(1000, 1, {TP: records(1, value=b"v%d" % i)})
    assert leader_partition.delete_records_on_leader(6) == 6
    assert leader_partition.log_start_offset == 6
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    server, partition = follower(tmp_path, follower_log, leader_epoch=1)
    leader = HandlerLeader(leader_rm)
    replicate(server, partition, leader, truncating=False, until=lambda: follower_log.log_end_offset == 10)
    assert leader.fetch_errors[0] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert follower_log.log_start_offset == 6 and values(follower_log) == [b"v%d" % i for i in range(6, 10)]
    assert partition.high_watermark == 10


def test_out_of_range_past_the_leaders_end_truncates_without_epochs_to_the_high_watermark(tmp_path: Path) -> None:
    # Records from before leader epochs: the leader (after an unclean election, say) has 5 of them, the
    # follower 8, 3 of them committed. The fetch at 8 is out of range; with no epochs to compare the
    # follower falls back to its HW, then copies the leader.
    leader_dir = tmp_path / "leader" / "t-0"
    old = Log.open(leader_dir, LogConfig())
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    for offset in range(8):
        batch = bytearray(build_batch([(b"k", b"old-%d" % offset, [], 0)], base_offset=offset))
        follower_log.append_as_follower(batch)
        if offset < 5:
            old.append_as_follower(batch)
    old.close()
    leader_rm = replica_manager(tmp_path / "leader", 0)
    leader_partition = lead(leader_rm, 1, isr=[0], replicas=[0, 1])
    leader_rm.append_records(1000, 1, {TP: records(2, value=b"new")})
    server, partition = follower(tmp_path, follower_log, leader_epoch=1, high_watermark=3)
    leader = HandlerLeader(leader_rm)
    replicate(server, partition, leader, truncating=False, until=lambda: follower_log.log_end_offset == 7)
    assert leader.fetch_errors[0] == ErrorCode.OFFSET_OUT_OF_RANGE
    assert leader.asked_epochs == []
    assert values(follower_log) == [b"old-%d" % i for i in range(5)] + [b"new", b"new"]
    assert leader_partition.high_watermark == 7


class SpyLeader(HandlerLeader):
    """Keeps every Fetch request the follower sent (decoded as the leader got it)."""

    def __init__(self, rm: ReplicaManager) -> None:
        super().__init__(rm)
        self.requests: list = []

    async def fetch(self, build):  # type: ignore[no-untyped-def]
        def spy(v: int):  # type: ignore[no-untyped-def]
            request = build(v)
            self.requests.append(request)
            return request
        return await super().fetch(spy)


def _fetched(request) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    return [(p.partition, p.fetch_offset) for t in request.topics for p in t.partitions]


def _session_fetcher(server: KafkaServer, partition: Partition, leader: HandlerLeader
                     ) -> tuple[ReplicaFetcher, Any]:
    """The follower's fetcher of TP from `leader`, past truncation; `_fetch` is then called by hand."""
    fetcher = ReplicaFetcher(server, 0, leader)
    fetcher.add(partition)
    state = fetcher.partitions[TP]
    state.truncating = False
    return fetcher, state


def test_the_follower_fetches_in_an_incremental_session_and_starts_over_after_a_session_error(
        tmp_path: Path) -> None:
    # KIP-227 as Kafka's follower: a full fetch opens the session; then each request names only the
    # partitions whose fetch offset (or epoch, log start) changed, and the leader answers from the session.
    leader_rm = replica_manager(tmp_path / "leader", 0)
    leader_partition = lead(leader_rm, 1, isr=[0, 1], replicas=[0, 1])
    leader_rm.append_records(1000, 1, {TP: records(3, value=b"a")})
    leader = SpyLeader(leader_rm)
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    server, partition = follower(tmp_path, follower_log, leader_epoch=1)
    sessions = leader.server.fetch_sessions.sessions

    async def run() -> None:
        fetcher, state = _session_fetcher(server, partition, leader)

        async def fetch() -> None:
            await fetcher._fetch({TP: state})

        await fetch()
        first = leader.requests[-1]
        assert (first.session_epoch, _fetched(first)) == (0, [(0, 0)])
        assert follower_log.log_end_offset == 3 and len(sessions) == 1
        session_id = next(iter(sessions))

        await fetch()  # our offset moved: the partition is in the request, in session epoch 1
        req = leader.requests[-1]
        assert (req.session_id, req.session_epoch, _fetched(req)) == (session_id, 1, [(0, 3)])

        await fetch()  # nothing changed: an empty incremental request
        req = leader.requests[-1]
        assert (req.session_epoch, _fetched(req)) == (2, [])

        leader_rm.append_records(1000, 1, {TP: records(2, value=b"b")})
        await fetch()  # still nothing to say, but the leader reads from the offset the session holds
        assert _fetched(leader.requests[-1]) == [] and follower_log.log_end_offset == 5
        assert leader_partition.high_watermark == 3  # the follower has only told the leader about offset 3

        sessions.clear()  # the leader lost the session (evicted, restarted)
        leader_rm.append_records(1000, 1, {TP: records(1, value=b"c")})
        await fetch()  # FETCH_SESSION_ID_NOT_FOUND: nothing appended, and no error to back off on
        assert leader.requests[-1].session_epoch == 4 and follower_log.log_end_offset == 5
        assert state.delayed_until == 0.0
        await fetch()  # a full request again, closing the lost session id, opening a new one
        req = leader.requests[-1]
        assert (req.session_id, req.session_epoch, _fetched(req)) == (session_id, 0, [(0, 5)])
        assert follower_log.log_end_offset == 6 and len(sessions) == 1
        await fetch()
        assert leader_partition.high_watermark == 6

        fetcher.remove(TP)
        await fetcher._fetch({})  # a partition no longer fetched is forgotten by the session
        req = leader.requests[-1]
        assert [(t.topic, list(t.partitions)) for t in req.forgotten_topics_data] == [(TP.topic, [0])]
        assert next(iter(sessions.values())).partitions == {}

    asyncio.run(run())
    assert values(follower_log) == [b"a"] * 3 + [b"b"] * 2 + [b"c"]


def test_a_partition_the_leader_answered_with_an_error_is_named_again_in_the_session(tmp_path: Path) -> None:
    # The leader leads before its metadata knows the topic id (LeaderAndIsr comes before UpdateMetadata): the
    # follower's first, full fetch gets UNKNOWN_TOPIC_ID and the session the leader opens does not hold the
    # partition. After the back-off the follower must name it again, or it would never fetch it (seen as a
    # follower that never replicated, its acknowledged writes lost in an unclean election).
    leader_rm = replica_manager(tmp_path / "leader", 0, known=())
    lead(leader_rm, 1, isr=[0, 1], replicas=[0, 1])
    leader_rm.append_records(1000, 1, {TP: records(2, value=b"a")})
    leader = SpyLeader(leader_rm)
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    server, partition = follower(tmp_path, follower_log, leader_epoch=1)

    async def run() -> None:
        fetcher, state = _session_fetcher(server, partition, leader)
        await fetcher._fetch({TP: state})
        assert leader.fetch_errors == [ErrorCode.UNKNOWN_TOPIC_ID] and state.delayed_until > 0
        leader_rm.metadata_cache.update_partition(TP.topic, TOPIC_ID, PartitionMetadata(TP.partition, 0, 1,
                                                                                        (0, 1), (0, 1)))
        state.delayed_until = 0.0  # the back-off is over
        await fetcher._fetch({TP: state})
        req = leader.requests[-1]
        assert (req.session_epoch, _fetched(req)) == (1, [(0, 0)])
        assert follower_log.log_end_offset == 2

    asyncio.run(run())


def test_the_follower_fetches_by_the_topic_id_leader_and_isr_gave_before_its_metadata_knows_it(
        tmp_path: Path) -> None:
    # In ZooKeeper mode UpdateMetadata may reach the follower after LeaderAndIsr: its metadata cache does not know
    # the topic id yet, the partition does. Fetching by the cache's (missing) id was answered for an id the
    # follower could not map, silently, and the partition was never fetched (test_isr: a follower with LEO -1).
    leader_rm = replica_manager(tmp_path / "leader", 0)
    lead(leader_rm, 1, isr=[0, 1], replicas=[0, 1])
    leader_rm.append_records(1000, 1, {TP: records(2, value=b"a")})
    leader = SpyLeader(leader_rm)
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    server = KafkaServer(KafkaConfig({"broker.id": "1", "log.dirs": str(tmp_path / "follower-server"),
                                      "replica.fetch.wait.max.ms": "0"}))
    assert server.metadata_cache.topic_id(TP.topic) is None
    partition = Partition(TP, 1, replica_lag_time_max_ms=10000)
    partition.set_log(follower_log, 0)
    partition.topic_id = TOPIC_ID
    partition.make_follower(PartitionState(leader=0, leader_epoch=1, isr=[0, 1], replicas=[0, 1]))
    replicate(server, partition, leader, truncating=False, until=lambda: follower_log.log_end_offset == 2)
    assert [t.topic_id for t in leader.requests[0].topics] == [TOPIC_ID]


def test_an_answer_naming_partitions_outside_the_session_starts_a_new_session(tmp_path: Path) -> None:
    # Kafka's FetchSessionHandler refuses an incremental answer naming partitions the session does not hold and
    # starts over with a full request, which replaces the leader's session: a leader whose session kept a
    # partition we forgot (a deleted topic's) would otherwise answer it at once forever, a busy loop.
    leader_rm = replica_manager(tmp_path / "leader", 0)
    lead(leader_rm, 1, isr=[0, 1], replicas=[0, 1])
    leader_rm.append_records(1000, 1, {TP: records(2, value=b"a")})

    class StrayLeader(SpyLeader):
        stray = False

        async def fetch(self, build):  # type: ignore[no-untyped-def]
            resp = await super().fetch(build)
            if self.stray:
                Resp = type(resp)
                part = Resp.FetchableTopicResponse.PartitionData(
                    partition_index=7, error_code=ErrorCode.UNKNOWN_TOPIC_ID, high_watermark=-1,
                    last_stable_offset=-1, log_start_offset=-1, records=b"")
                resp.responses.append(Resp.FetchableTopicResponse(topic="", topic_id=uuid.uuid4(), partitions=[part]))
            return resp

    leader = StrayLeader(leader_rm)
    follower_log = Log.open(tmp_path / "f" / "t-0", LogConfig())
    server, partition = follower(tmp_path, follower_log, leader_epoch=1)

    async def run() -> None:
        fetcher, state = _session_fetcher(server, partition, leader)
        await fetcher._fetch({TP: state})
        await fetcher._fetch({TP: state})
        assert leader.requests[-1].session_epoch == 1
        leader.stray = True
        await fetcher._fetch({TP: state})
        leader.stray = False
        await fetcher._fetch({TP: state})
        req = leader.requests[-1]
        assert (req.session_epoch, _fetched(req)) == (0, [(0, 2)])

    asyncio.run(run())
