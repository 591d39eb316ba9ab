"""The frames a fuzz run mutates.

- `client_frames()`: every request frame under tests/fixtures/frames/ (the golden frames of
  tests/protocol/recording_broker.py and the fuller recordings of `fuzz.record`), as stock clients sent them.
- `inter_broker_frames()`: what a controller and KRaft peers send a broker, built from our codec with plausible
  values: LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown, AlterPartition, AllocateProducerIds,
  BrokerRegistration, BrokerHeartbeat, AssignReplicasToDirs, Envelope, FetchSnapshot, a KRaft follower's Fetch of
  __cluster_metadata, and the Raft RPCs our codec has no classes for (Vote, BeginQuorumEpoch, EndQuorumEpoch,
  DescribeQuorum), written by hand in their first versions. Deterministic: the same list every call.
"""

from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Any

from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.codecs import UUID, BitField, Boolean, Bytes, Float64, String
from kafka.protocol.schemas.fields.struct import StructField

from protocol import SUPPORTED_VERSIONS, ApiKey, encode_request, request_class
from protocol.kafka_python_ext import RecordsView, uvarint_bytes

FRAMES_DIR = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "frames"
INTER_BROKER_TOPIC = "ib-fuzz"  # never the topic whose records a run checks
_TOPIC_ID = uuid.UUID(int=0x1B)

_INTER_BROKER_APIS = (
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.ALTER_PARTITION, ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT,
    ApiKey.ASSIGN_REPLICAS_TO_DIRS, ApiKey.ENVELOPE, ApiKey.FETCH_SNAPSHOT, ApiKey.WRITE_TXN_MARKERS,
)


def client_frames(root: Path = FRAMES_DIR) -> list[bytes]:
    """Every recorded request frame, sorted by path (so a seed means the same frames on every machine)."""
    return [p.read_bytes() for p in sorted(root.rglob("*.bin"))]


def _value(field: Any, version: int, flexible: bool) -> Any:
    """A plausible value for one field, by its name and type: ids and epochs 1, our topic, one element."""
    if isinstance(field, ArrayField):
        return [_value(field.array_of, version, flexible)]
    if isinstance(field, StructField):
        return _struct(field.data_class, field, version, flexible)
    codec = field._type
    name = field.name
    if codec is Boolean:
        return False
    if codec is Float64:
        return 0.0
    if codec is UUID:
        return _TOPIC_ID
    if isinstance(codec, String):
        if name in ("topic", "name", "topic_name"):
            return INTER_BROKER_TOPIC
        return "127.0.0.1" if "host" in name else "fuzz"
    if codec is Bytes or codec is RecordsView:
        return b""
    if codec is BitField:
        return None
    if "partition" in name and "epoch" not in name:
        return 0
    if "offset" in name or "timestamp" in name or "time" in name:
        return 0
    return 1


def _struct(cls: Any, struct_field: StructField, version: int, flexible: bool) -> Any:
    values = {f.name: _value(f, version, flexible) for f in struct_field._fields
              if f.for_version_q(version) and (flexible or not f.tagged_field_q(version))}
    return cls(**values)


def _message(api_key: int, version: int) -> bytes:
    cls = request_class(api_key)
    message = _struct(cls[version], cls._struct, version, cls.flexible_version_q(version))
    message.with_header(correlation_id=1, client_id="fuzz-controller")
    return encode_request(message)


def _classic_string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def _compact_string(s: str) -> bytes:
    raw = s.encode()
    return uvarint_bytes(len(raw) + 1) + raw


def _raft_frames() -> list[bytes]:
    """Vote v0, BeginQuorumEpoch v0, EndQuorumEpoch v0 and DescribeQuorum v0 for __cluster_metadata-0."""
    topic = "__cluster_metadata"

    def header(key: int, flexible: bool) -> bytes:
        return struct.pack(">hhi", key, 0, 1) + _classic_string("fuzz-raft") + (b"\x00" if flexible else b"")

    vote = (header(52, True) + _compact_string("fuzz-cluster") + uvarint_bytes(2) + _compact_string(topic)
            + uvarint_bytes(2) + struct.pack(">iiiiq", 0, 2, 1, 1, 10) + b"\x00" + b"\x00" + b"\x00")
    begin = (header(53, False) + _classic_string("fuzz-cluster") + struct.pack(">i", 1) + _classic_string(topic)
             + struct.pack(">i", 1) + struct.pack(">iii", 0, 1, 2))
    end = (header(54, False) + _classic_string("fuzz-cluster") + struct.pack(">i", 1) + _classic_string(topic)
           + struct.pack(">i", 1) + struct.pack(">iii", 0, 1, 2) + struct.pack(">ii", 1, 1))
    describe = (header(55, True) + uvarint_bytes(2) + _compact_string(topic) + uvarint_bytes(2)
                + struct.pack(">i", 0) + b"\x00" + b"\x00" + b"\x00")
    return [vote, begin, end, describe]


def _metadata_fetch(version: int) -> bytes:
    """A KRaft follower's Fetch of __cluster_metadata (replica id and epoch, the cluster id tag from v12)."""
    cls = request_class(ApiKey.FETCH)
    topic = cls.FetchTopic
    fields: dict[str, Any] = dict(replica_id=1, max_wait_ms=500, min_bytes=0, max_bytes=8 << 20,
                                  isolation_level=0, session_id=0, session_epoch=-1, topics=[topic(
                                      topic="__cluster_metadata", topic_id=_TOPIC_ID, partitions=[
                                          topic.FetchPartition(partition=0, current_leader_epoch=1,
                                                               fetch_offset=0, last_fetched_epoch=0,
                                                               log_start_offset=-1, partition_max_bytes=8 << 20)])],
                                  forgotten_topics_data=[], rack_id="")
    if version >= 12:
        fields["cluster_id"] = "fuzz-cluster"
    if version >= 15:
        fields.pop("replica_id")
        fields["replica_state"] = cls.ReplicaState(replica_id=1, replica_epoch=1)
    message = cls[version](**fields)
    message.with_header(correlation_id=1, client_id="fuzz-raft")
    return encode_request(message)


def inter_broker_frames() -> list[bytes]:
    frames = []
    for key in _INTER_BROKER_APIS:
        low, high = SUPPORTED_VERSIONS[key]
        frames += [_message(key, version) for version in range(low, high + 1)]
    frames += [_metadata_fetch(version) for version in (11, 12, 13, 15, 16)]
    return frames + _raft_frames()


CORPORA = {"clients": client_frames, "inter-broker": inter_broker_frames}
