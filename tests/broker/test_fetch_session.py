"""Fetch sessions (KIP-227) on the broker side, through the real Fetch handler and the codec."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from broker.metadata.metadata_cache import PartitionMetadata
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .replication import TOPIC_ID, TP, HandlerLeader, lead, records, replica_manager

Req = request_class(ApiKey.FETCH)
Topic = Req.FetchTopic


def _request(v: int, session_id: int, epoch: int, partitions: list[int]) -> Any:
    parts = [Topic.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                  log_start_offset=-1, partition_max_bytes=1 << 20) for p in partitions]
    return Req[v](replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                  session_id=session_id, session_epoch=epoch, forgotten_topics_data=[], rack_id="",
                  topics=[Topic(topic="", topic_id=TOPIC_ID, partitions=parts)] if parts else [])


def test_a_partition_of_an_unknown_topic_id_stays_in_the_session_until_the_id_resolves(tmp_path: Path) -> None:
    # A consumer's session names a topic by an id this broker does not know yet (its metadata lags): Kafka keeps
    # the partition in the session, answers UNKNOWN_TOPIC_ID, and serves it once the id is known, without the
    # client naming it again (Java's and librdkafka's sessions send a partition only when its state changes).
    rm = replica_manager(tmp_path, 0, known=())
    lead(rm, 1, isr=[0], replicas=[0])
    rm.append_records(1000, 1, {TP: records(3, value=b"a")})
    leader = HandlerLeader(rm)
    leader.server.quotas = SimpleNamespace(quotas={})  # a consumer here, not a replica: no quotas set

    async def run() -> None:
        first = await leader.fetch(lambda v: _request(v, 0, 0, [TP.partition]))
        assert [(t.topic_id, p.error_code) for t in first.responses for p in t.partitions] == \
            [(TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_ID)]
        assert first.session_id != 0
        again = await leader.fetch(lambda v: _request(v, first.session_id, 1, []))
        assert [p.error_code for t in again.responses for p in t.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]

        rm.metadata_cache.update_partition(TP.topic, TOPIC_ID, PartitionMetadata(TP.partition, 0, 1, (0,), (0,)))
        resolved = await leader.fetch(lambda v: _request(v, first.session_id, 2, []))
        got = [(t.topic_id, p.partition_index, p.error_code, p.high_watermark)
               for t in resolved.responses for p in t.partitions]
        assert got == [(TOPIC_ID, TP.partition, ErrorCode.NONE, 3)]
        assert resolved.responses[0].partitions[0].records

    asyncio.run(run())


def test_a_forgotten_partition_of_a_deleted_topic_leaves_the_session(tmp_path: Path) -> None:
    # A follower forgets, by topic id, a partition whose topic this broker has already deleted from its metadata:
    # the session must drop it even though the id no longer has a name, or every later fetch in the session
    # answers it (an error, or data) at once and the follower's long poll becomes a busy loop.
    rm = replica_manager(tmp_path, 0)
    lead(rm, 1, isr=[0], replicas=[0])
    rm.append_records(1000, 1, {TP: records(3, value=b"a")})
    leader = HandlerLeader(rm)
    leader.server.quotas = SimpleNamespace(quotas={})

    async def run() -> None:
        first = await leader.fetch(lambda v: _request(v, 0, 0, [TP.partition]))
        assert [p.error_code for t in first.responses for p in t.partitions] == [ErrorCode.NONE]
        rm.metadata_cache.remove_topic(TP.topic)

        def forget(v: int) -> Any:
            req = _request(v, first.session_id, 1, [])
            req.forgotten_topics_data = [Req.ForgottenTopic(topic="", topic_id=TOPIC_ID, partitions=[TP.partition])]
            return req

        forgot = await leader.fetch(forget)
        assert forgot.error_code == ErrorCode.NONE and forgot.responses == []
        rm.append_records(1000, 1, {TP: records(2, value=b"b")})  # new data of the forgotten partition
        after = await leader.fetch(lambda v: _request(v, first.session_id, 2, []))
        assert after.responses == []

    asyncio.run(run())
