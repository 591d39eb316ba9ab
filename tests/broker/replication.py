"""Replication pieces for broker unit tests, without sockets.

- `replica_manager(...)`: a real ReplicaManager on real logs in a temporary directory, with a metadata
  cache that knows the test topic (as UpdateMetadata would have told it).
- `lead(...)` / `follow(...)`: LeaderAndIsr for one partition.
- `HandlerLeader`: a leader behind the replica fetcher's `LeaderEndPoint`. Each request the fetcher builds
  is encoded and decoded by the protocol codec, handled by the broker's real Fetch / OffsetForLeaderEpoch
  handler against a leader-side ReplicaManager, and the response comes back through the codec (record
  slices read from the leader's segment files), as over a socket.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from broker.apis import fetch as fetch_api
from broker.apis import offset_for_leader_epoch as offset_for_leader_epoch_api
from broker.apis.base import RequestContext
from broker.cluster.partition import PartitionState
from broker.metadata.metadata_cache import MetadataCache, PartitionMetadata
from broker.server.fetch_session import FetchSessionCache
from broker.server.replica_manager import ReplicaManager
from protocol import (
    SUPPORTED_VERSIONS,
    RecordsRef,
    decode_request,
    decode_response,
    encode_request,
    encode_response_parts,
)
from protocol.records import build_batch
from storage import LogConfig, LogManager, TopicPartition

TOPIC = "t"
TP = TopicPartition(TOPIC, 0)
TOPIC_ID = uuid.UUID(int=7)
LAG_MS = 10_000


def metadata_cache(broker_id: int, *tps: TopicPartition) -> MetadataCache:
    cache = MetadataCache(broker_id, "test-cluster")
    for tp in tps:
        cache.update_partition(tp.topic, TOPIC_ID, PartitionMetadata(tp.partition, 0, 0, (0, 1, 2), (0, 1, 2)))
    return cache


_open: list[LogManager] = []


def close_all() -> None:
    """Close every log the helpers opened (the `tests/broker` conftest does it after each test)."""
    while _open:
        _open.pop().shutdown()


def replica_manager(log_dir: Path, broker_id: int, *, min_insync_replicas: int = 1,
                    config: LogConfig | None = None, known: tuple[TopicPartition, ...] = (TP,)) -> ReplicaManager:
    config = config or LogConfig()
    log_manager = LogManager([log_dir], config)
    log_manager.startup()
    _open.append(log_manager)
    rm = ReplicaManager(broker_id, log_manager, replica_lag_time_max_ms=LAG_MS,
                        log_config_for=lambda topic: config,
                        min_insync_replicas_for=lambda topic: min_insync_replicas,
                        metadata_cache=metadata_cache(broker_id, *known))
    # These tests step the leader's rules synchronously: appends write in place (tests/broker/test_log_writes.py
    # covers the writer threads, and every socket test runs with them).
    rm.log_writes = None
    return rm


def state(leader: int, epoch: int, isr: list[int], replicas: list[int] | None = None,
          controller_epoch: int = 1) -> PartitionState:
    return PartitionState(leader=leader, leader_epoch=epoch, isr=list(isr),
                          replicas=list(replicas if replicas is not None else [0, 1, 2]),
                          controller_epoch=controller_epoch)


def lead(rm: ReplicaManager, epoch: int, isr: list[int], replicas: list[int] | None = None,
         tp: TopicPartition = TP) -> Any:
    errors = rm.become_leader_or_follower(0, 1, {tp: state(rm.broker_id, epoch, isr, replicas)}, {tp.topic: TOPIC_ID})
    assert errors == {tp: 0}
    return rm.partitions[tp]


def follow(rm: ReplicaManager, leader: int, epoch: int, isr: list[int], replicas: list[int] | None = None,
           tp: TopicPartition = TP) -> Any:
    errors = rm.become_leader_or_follower(0, 1, {tp: state(leader, epoch, isr, replicas)}, {tp.topic: TOPIC_ID})
    assert errors == {tp: 0}
    return rm.partitions[tp]


def records(n: int = 1, *, value: bytes = b"v", base_offset: int = 0, partition_leader_epoch: int = -1) -> memoryview:
    """One batch of `n` records stamped now (an old timestamp would roll a segment on every append)."""
    now = time.time_ns() // 1_000_000
    return memoryview(bytearray(build_batch([(b"k", value, [], now)] * n, base_offset=base_offset,
                                            partition_leader_epoch=partition_leader_epoch)))


class HandlerLeader:
    """A `LeaderEndPoint` answered by the real request handlers of a leader-side ReplicaManager."""

    def __init__(self, rm: ReplicaManager) -> None:
        self.server = SimpleNamespace(replica_manager=rm, metadata_cache=rm.metadata_cache,
                                      fetch_sessions=FetchSessionCache(10), authorizer=None, metrics=None)
        self.asked_epochs: list[int] = []  # leader epochs the follower asked OffsetForLeaderEpoch about
        self.fetch_errors: list[int] = []  # partition error codes of the fetch answers

    @staticmethod
    def _version(handler: ModuleType) -> int:
        return min(handler.MAX_VERSION, SUPPORTED_VERSIONS[handler.API_KEY][1])

    async def _call(self, handler: ModuleType, build: Any) -> Any:
        api_key = handler.API_KEY
        version = self._version(handler)
        request = build(version)
        request.with_header(correlation_id=1, client_id="replica-fetcher")
        decoded = decode_request(encode_request(request))
        ctx = RequestContext(self.server, None, api_key, version, 1, "replica-fetcher")  # type: ignore[arg-type]
        response = handler.handle(ctx, decoded)
        if asyncio.iscoroutine(response):
            response = await response
        response.with_header(correlation_id=1)
        _, parts = encode_response_parts(response)
        frame = b"".join(part.source.read() if isinstance(part, RecordsRef) else bytes(part) for part in parts)
        return decode_response(frame, api_key, version)

    async def fetch(self, build: Any) -> Any:
        response = await self._call(fetch_api, build)
        self.fetch_errors.extend(p.error_code for t in response.responses for p in t.partitions)
        return response

    async def offsets_for_leader_epoch(self, build: Any) -> Any:
        probe = build(self._version(offset_for_leader_epoch_api))
        self.asked_epochs.extend(p.leader_epoch for t in probe.topics for p in t.partitions)
        return await self._call(offset_for_leader_epoch_api, build)

    async def list_offsets(self, build: Any) -> Any:
        raise NotImplementedError("the fetcher does not ask ListOffsets")

    def close(self) -> None:
        pass
