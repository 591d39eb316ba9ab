"""Kafka 4.1's ShareGroupStatePartitionMetadata record (key 15 in `__consumer_offsets`): which partitions of a
share group have share-partition state in the share coordinator, which are being initialized, which topics
are being deleted.

Contract:
- `StatePartitionMetadata` is a group's copy: `initializing` and `initialized` map a topic id to its name, the
  partitions and the time they entered that state (ms); `deleting` maps a topic id to its name.
- `state_partition_metadata_record(group_id, metadata)` and `decode_state_partition_metadata(raw)` are Kafka's
  key (version 15, the group id) and flexible value version 0 (InitializingTopics and InitializedTopics:
  TopicId, TopicName, Partitions, CreateTimestamp; DeletingTopics: TopicId, TopicName). A None value is the
  tombstone of a deleted group.
- The rules that use it (share_requests.py, share_offsets.py): a member is assigned only initialized
  partitions; the partitions of subscribed topics not yet initialized (or initializing for longer than
  `INITIALIZE_RETRY_MS`) are initialized through the persister (state epoch = the group epoch, start offset -1:
  the share-partition leader applies `share.auto.offset.reset`) after the heartbeat that found them, and move
  to `initialized` once the persister has them (back out of `initializing` when it failed); DeleteGroups and
  DeleteShareGroupOffsets delete the state of every initialized and initializing partition through the
  persister, wherever its share-partition leader is.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from broker.coordinator.group.consumer_records import _Flex, _key, _value

STATE_PARTITION_METADATA = 15
# Kafka's group.share.initialize.retry.interval.ms default: an initialization older than this is tried again.
INITIALIZE_RETRY_MS = 30_000

Record = tuple[bytes, bytes | None]
_I64 = struct.Struct(">q")


@dataclass(slots=True)
class InitValue:
    name: str
    partitions: frozenset[int]
    timestamp_ms: int


@dataclass
class StatePartitionMetadata:
    initializing: dict[uuid.UUID, InitValue] = field(default_factory=dict)
    initialized: dict[uuid.UUID, InitValue] = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)

    def copy(self) -> StatePartitionMetadata:
        return StatePartitionMetadata(dict(self.initializing), dict(self.initialized), dict(self.deleting))

    def with_state(self) -> dict[uuid.UUID, InitValue]:
        """The partitions whose state may exist: initialized and initializing, merged per topic."""
        return combine(self.initialized, self.initializing)


def combine(a: dict[uuid.UUID, InitValue], b: dict[uuid.UUID, InitValue]) -> dict[uuid.UUID, InitValue]:
    out = dict(a)
    for tid, v in b.items():
        have = out.get(tid)
        out[tid] = v if have is None else InitValue(have.name or v.name, have.partitions | v.partitions,
                                                    min(have.timestamp_ms, v.timestamp_ms))
    return out


def remove(a: dict[uuid.UUID, InitValue], gone: dict[uuid.UUID, frozenset[int]]) -> dict[uuid.UUID, InitValue]:
    out = {}
    for tid, v in a.items():
        left = v.partitions - gone.get(tid, frozenset())
        if left:
            out[tid] = InitValue(v.name, left, v.timestamp_ms)
    return out


def state_partition_metadata_record(group_id: str, m: StatePartitionMetadata) -> Record:
    w = _Flex()
    for topics in (m.initializing, m.initialized):
        w.length(len(topics))
        for tid, v in sorted(topics.items(), key=lambda item: str(item[0])):
            w.uuid(tid)
            w.string(v.name)
            w.length(len(v.partitions))
            for p in sorted(v.partitions):
                w.int32(p)
            w.parts.append(_I64.pack(v.timestamp_ms))
            w.tags()
    w.length(len(m.deleting))
    for tid, name in sorted(m.deleting.items(), key=lambda item: str(item[0])):
        w.uuid(tid)
        w.string(name)
        w.tags()
    return _key(STATE_PARTITION_METADATA, group_id), w.value()


def state_partition_metadata_tombstone(group_id: str) -> Record:
    return _key(STATE_PARTITION_METADATA, group_id), None


def decode_state_partition_metadata(raw: bytes | memoryview) -> StatePartitionMetadata:
    r = _value(raw)
    out = StatePartitionMetadata()
    for topics in (out.initializing, out.initialized):
        for _ in range(r.length()):
            tid, name = r.uuid(), r.string() or ""
            partitions = frozenset(r.int32() for _ in range(r.length()))
            timestamp = int(_I64.unpack(r.take(8))[0])
            r.tags()
            topics[tid] = InitValue(name, partitions, timestamp)
    for _ in range(r.length()):
        tid, name = r.uuid(), r.string() or ""
        r.tags()
        out.deleting[tid] = name
    return out
