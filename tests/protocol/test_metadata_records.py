"""KRaft metadata records: every type at every version round-trips through Kafka's record frame, and the
frame bytes of a few records are spelled out by hand from Kafka's layout (AbstractApiMessageSerde: unsigned
varint frame version 1, record type, record version, then the flexible-version body)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.metadata_records import (
    CONTROL_CLASSES,
    RECORD_CLASSES,
    ApiMessageAndVersion,
    ClearElrRecord,
    FeatureLevelRecord,
    KRaftControlRecordType,
    LeaderChangeMessage,
    MetadataParseError,
    MetadataRecordType,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    TopicRecord,
    VotersRecord,
    decode_control_record,
    decode_metadata_batches,
    decode_metadata_record,
    encode_control_record,
    encode_metadata_record,
)
from records import build_batch
from tests.protocol.message_strategies import _UNKNOWN_TAGS, value_for

CASES = [(cls, v) for _, cls in sorted(RECORD_CLASSES.items()) for v in range(cls.min_version, cls.max_version + 1)]
IDS = [f'{cls.__name__}-v{v}' for cls, v in CASES]
EXAMPLES = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _record_strategy(cls: Any, version: int) -> st.SearchStrategy[Any]:
    fields = {f.name: value_for(f, version, True) for f in cls._struct._fields if f.for_version_q(version)}
    fields['unknown'] = _UNKNOWN_TAGS

    def build(values: dict[str, Any]) -> Any:
        unknown = values.pop('unknown', None) or {}
        return cls(**values, **unknown, version=version)

    return st.fixed_dictionaries(fields).map(build)


def _cs(value: str) -> bytes:  # compact string
    return bytes([len(value) + 1]) + value.encode()


def test_every_kafka_record_type_has_a_class() -> None:
    assert set(RECORD_CLASSES) == {int(t) for t in MetadataRecordType}
    for type_id, cls in RECORD_CLASSES.items():
        assert cls.record_type == type_id
        assert MetadataRecordType(type_id).name.replace('_', '') == cls.__name__.upper()
    # The versions Kafka 4.4 defines (tests/protocol/test_schemas_match_kafka.py compares every field with its jars).
    assert (RegisterBrokerRecord.max_version, PartitionRecord.max_version, PartitionChangeRecord.max_version) == (
        4, 2, 2)


@pytest.mark.parametrize(('cls', 'version'), CASES, ids=IDS)
def test_round_trip_every_type_and_version(cls: Any, version: int) -> None:
    @EXAMPLES
    @given(message=_record_strategy(cls, version))
    def check(message: Any) -> None:
        frame = encode_metadata_record(message, version)
        assert frame[:1] == b'\x01'
        decoded = decode_metadata_record(frame)
        assert isinstance(decoded, ApiMessageAndVersion)
        assert type(decoded.message) is cls and decoded.version == version
        assert encode_metadata_record(decoded.message, version) == frame
        assert encode_metadata_record(decoded.message) == frame  # the decoded version is remembered

    check()


@pytest.mark.parametrize(('control_type', 'cls'), sorted(CONTROL_CLASSES.items()), ids=lambda x: str(x))
def test_control_records_round_trip(control_type: KRaftControlRecordType, cls: Any) -> None:
    @EXAMPLES
    @given(message=_record_strategy(cls, 0))
    def check(message: Any) -> None:
        key, value = encode_control_record(message)
        assert key == struct.pack('>hh', 0, int(control_type))
        decoded_type, decoded = decode_control_record(key, value)
        assert decoded_type == control_type and type(decoded) is cls
        assert encode_control_record(decoded) == (key, value)

    check()


def test_topic_record_frame_by_hand() -> None:
    topic_id = uuid.UUID('0b5a4c5e-9a0d-4e1c-8f7e-3d2c1b0a9f8e')
    frame = encode_metadata_record(TopicRecord(name='foo', topic_id=topic_id))
    assert frame == b'\x01' + b'\x02' + b'\x00' + _cs('foo') + topic_id.bytes + b'\x00'
    decoded = decode_metadata_record(frame)
    assert decoded.version == 0
    assert (decoded.message.name, decoded.message.topic_id) == ('foo', topic_id)


def test_partition_change_record_frame_by_hand() -> None:
    topic_id = uuid.UUID(int=2)
    record = PartitionChangeRecord(partition_id=1, topic_id=topic_id, isr=[1, 2], leader=3)
    frame = encode_metadata_record(record, 0)
    assert frame == (
        b'\x01\x05\x00' + struct.pack('>i', 1) + topic_id.bytes
        + b'\x02'  # two tagged fields, in tag order
        + b'\x00\x09' + b'\x03' + struct.pack('>ii', 1, 2)  # tag 0 (Isr): 9 bytes, a compact array of two
        + b'\x01\x04' + struct.pack('>i', 3)  # tag 1 (Leader): 4 bytes
    )
    message = decode_metadata_record(frame).message
    assert message.isr == [1, 2] and message.leader == 3
    # Fields left at their defaults are absent: no replicas change, no leader recovery state change.
    assert message.replicas is None and message.leader_recovery_state == -1
    assert encode_metadata_record(PartitionChangeRecord(partition_id=1, topic_id=topic_id), 0) == (
        b'\x01\x05\x00' + struct.pack('>i', 1) + topic_id.bytes + b'\x00')


def test_feature_level_and_noop_frames_by_hand() -> None:
    frame = encode_metadata_record(FeatureLevelRecord(name='metadata.version', feature_level=21))
    assert frame == b'\x01\x0c\x00' + _cs('metadata.version') + struct.pack('>h', 21) + b'\x00'
    assert encode_metadata_record(NoOpRecord()) == b'\x01\x14\x00\x00'


def test_clear_elr_record_frame_by_hand() -> None:
    # Kafka 4.0+ (type 28): a compact string, empty for "every topic".
    assert encode_metadata_record(ClearElrRecord(topic_name='foo')) == b'\x01\x1c\x00' + _cs('foo') + b'\x00'
    frame = b'\x01\x1c\x00' + _cs('') + b'\x00'
    decoded = decode_metadata_record(frame)
    assert (type(decoded.message), decoded.version, decoded.message.topic_name) == (ClearElrRecord, 0, '')


def test_partition_change_record_v2_elr_fields_are_tagged() -> None:
    # What a 4.0-IV1+ controller writes when ELR is enabled: EligibleLeaderReplicas tag 6, LastKnownElr tag 7.
    topic_id = uuid.UUID(int=3)
    record = PartitionChangeRecord(partition_id=0, topic_id=topic_id, eligible_leader_replicas=[2],
                                   last_known_elr=[])
    frame = encode_metadata_record(record, 2)
    assert frame == (b'\x01\x05\x02' + struct.pack('>i', 0) + topic_id.bytes + b'\x02'
                     + b'\x06\x05\x02' + struct.pack('>i', 2) + b'\x07\x01\x01')
    message = decode_metadata_record(frame).message
    assert (message.eligible_leader_replicas, message.last_known_elr, message.isr) == ([2], [], None)


def test_register_broker_v3_log_dirs_are_a_tagged_field() -> None:
    dirs = [uuid.UUID(int=7), uuid.UUID(int=8)]
    record = RegisterBrokerRecord(broker_id=4, incarnation_id=uuid.UUID(int=9), broker_epoch=10, end_points=[
        RegisterBrokerRecord.BrokerEndpoint(name='PLAINTEXT', host='h', port=9092, security_protocol=0)],
        features=[], rack=None, fenced=True, in_controlled_shutdown=False, log_dirs=dirs)
    frame = encode_metadata_record(record, 3)
    assert frame.endswith(b'\x01\x00\x21\x03' + dirs[0].bytes + dirs[1].bytes)
    assert decode_metadata_record(frame).message.log_dirs == dirs
    # Version 2 has no LogDirs: they are not written.
    assert decode_metadata_record(encode_metadata_record(record, 2)).message.log_dirs == []


def test_snapshot_header_and_footer_by_hand() -> None:
    key, value = encode_control_record(SnapshotHeaderRecord(record_version=0, last_contained_log_timestamp=1234))
    assert (key, value) == (b'\x00\x00\x00\x03', b'\x00\x00' + struct.pack('>q', 1234) + b'\x00')
    assert encode_control_record(SnapshotFooterRecord(record_version=0)) == (b'\x00\x00\x00\x04', b'\x00\x00\x00')


def test_leader_change_is_read_at_version_0_as_kafka_does() -> None:
    message = LeaderChangeMessage(record_version=0, leader_id=1, voters=[LeaderChangeMessage.Voter(voter_id=1)],
                                  granting_voters=[LeaderChangeMessage.Voter(voter_id=1)])
    key, value = encode_control_record(message)
    assert value == b'\x00\x00' + struct.pack('>i', 1) + b'\x02' + struct.pack('>i', 1) + b'\x00' \
        + b'\x02' + struct.pack('>i', 1) + b'\x00' + b'\x00'
    control_type, decoded = decode_control_record(key, value + b'\xff')  # trailing bytes are ignored
    assert control_type == KRaftControlRecordType.LEADER_CHANGE and decoded.leader_id == 1


def test_voters_record_carries_endpoints() -> None:
    voter = VotersRecord.Voter(voter_id=3000, voter_directory_id=uuid.UUID(int=5), endpoints=[
        VotersRecord.Voter.Endpoint(name='CONTROLLER', host='localhost', port=9093)],
        k_raft_version_feature=VotersRecord.Voter.KRaftVersionFeature(min_supported_version=0,
                                                                       max_supported_version=1))
    key, value = encode_control_record(VotersRecord(record_version=0, voters=[voter]))
    _, decoded = decode_control_record(key, value)
    assert decoded.voters[0].endpoints[0].port == 9093


@pytest.mark.parametrize(('frame', 'message'), [
    (b'', 'frame version'),
    (b'\x00\x02\x00' + _cs('foo') + bytes(16) + b'\x00', 'frame version 0'),
    (b'\x02\x02\x00' + _cs('foo') + bytes(16) + b'\x00', 'unknown metadata record frame version 2'),
    (b'\x01\x06\x00\x00', 'unknown metadata record type 6'),
    (b'\x01\x80\x80\x02\x00\x00', 'too large'),
    (b'\x01\x02\x01' + _cs('foo') + bytes(16) + b'\x00', 'TopicRecord version 1 outside 0-0'),
    (b'\x01\x02\x00' + _cs('foo') + bytes(16) + b'\x00\x00', r'1 byte\(s\) of garbage'),
    (b'\x01\x02\x00' + _cs('foo') + bytes(10), 'malformed TopicRecord'),
    (b'\x01\x02\x00\x80\x80\x80\x80\x80\x01', 'malformed'),
    # MetadataRecordSerdeTest's malformed varints and over-large version.
    (b'\x80' * 6, 'error while reading frame version'),
    (b'\x01' + b'\x80' * 6, 'error while reading type'),
    (b'\x01\x08' + b'\x80' * 5, 'error while reading version'),
    (b'\x01\x08\xff\xff\xff\x7f', 'value for version was too large'),
    (b'\x0f', 'unknown metadata record frame version 15'),
], ids=['empty', 'frame-v0', 'frame-v2', 'unknown-type', 'type-too-large', 'version-too-high', 'garbage',
        'truncated', 'bad-varint', 'frame-varint', 'type-varint', 'version-varint', 'version-too-large',
        'frame-v15'])
def test_malformed_frames_raise_metadata_parse_error(frame: bytes, message: str) -> None:
    with pytest.raises(MetadataParseError, match=message):
        decode_metadata_record(frame)


def test_malformed_control_records() -> None:
    with pytest.raises(MetadataParseError, match='shorter than 4'):
        decode_control_record(b'\x00\x00', b'\x00\x00\x00')
    with pytest.raises(MetadataParseError, match='unknown KRaft control record type 1'):
        decode_control_record(b'\x00\x00\x00\x01', b'\x00\x00\x00\x00\x00\x00')  # a COMMIT marker
    with pytest.raises(MetadataParseError, match='invalid control record key version'):
        decode_control_record(b'\xff\xff\x00\x03', b'\x00\x00\x00')
    with pytest.raises(MetadataParseError, match='without a value'):
        decode_control_record(b'\x00\x00\x00\x04', b'')
    with pytest.raises(MetadataParseError, match='malformed SnapshotHeaderRecord'):
        decode_control_record(b'\x00\x00\x00\x03', b'\x00\x00\x00')
    with pytest.raises(TypeError):
        encode_metadata_record(SnapshotFooterRecord(record_version=0))
    with pytest.raises(TypeError):
        encode_control_record(NoOpRecord())


def _batch(records: list[tuple[bytes | None, bytes]], base: int = 0, control: bool = False,
           headers: tuple[tuple[str, bytes], ...] = ()) -> bytes:
    return build_batch([(k, v, headers, 5) for k, v in records], base_offset=base, is_control=control,
                       partition_leader_epoch=7)


def test_metadata_log_batches_are_decoded_by_kind() -> None:
    leader_change = LeaderChangeMessage(record_version=0, leader_id=3000,
                                        voters=[LeaderChangeMessage.Voter(voter_id=3000)], granting_voters=[])
    topic = TopicRecord(name='foo', topic_id=uuid.UUID(int=3))
    feature = FeatureLevelRecord(name='metadata.version', feature_level=19)
    log = (_batch([encode_control_record(leader_change)], control=True)
           + _batch([(None, encode_metadata_record(feature)), (None, encode_metadata_record(topic))], base=1)
           + _batch([(None, encode_metadata_record(NoOpRecord()))], base=3))
    batches = list(decode_metadata_batches(log))
    assert [(b.base_offset, b.last_offset, b.epoch, b.is_control) for b in batches] == [
        (0, 0, 7, True), (1, 2, 7, False), (3, 3, 7, False)]
    control_type, message = batches[0].control_records[0]
    assert control_type == KRaftControlRecordType.LEADER_CHANGE and message.leader_id == 3000
    assert [r.message.name for r in batches[1].records] == ['metadata.version', 'foo']
    assert batches[1].records[1].version == 0 and batches[2].records[0].message == NoOpRecord()


@pytest.mark.parametrize(('log', 'message'), [
    (_batch([(b'k', encode_metadata_record(NoOpRecord()))]), 'has a key'),
    (_batch([(None, b'')]), 'has no value'),
    (_batch([(None, encode_metadata_record(NoOpRecord()))], headers=(('h', b'v'),)), 'has headers'),
    (_batch([(None, b'\x02\x14\x00\x00')]), 'frame version 2'),
    (_batch([(struct.pack('>hh', 0, 1), b'\x00\x00\x00\x00\x00\x00')], control=True), 'control record type 1'),
    (_batch([(None, encode_metadata_record(NoOpRecord()))])[:-1], 'past the end'),
    (bytes(_batch([(None, encode_metadata_record(NoOpRecord()))])[:-1]) + b'\x07', 'CRC'),
], ids=['keyed', 'empty-value', 'headers', 'bad-frame', 'txn-marker', 'truncated', 'crc'])
def test_malformed_metadata_batches(log: bytes, message: str) -> None:
    with pytest.raises(MetadataParseError, match=message):
        list(decode_metadata_batches(log))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(data=st.binary(max_size=64), type_id=st.sampled_from(sorted(RECORD_CLASSES)), version=st.integers(0, 3))
def test_arbitrary_bytes_raise_only_metadata_parse_error(data: bytes, type_id: int, version: int) -> None:
    for frame in (data, b'\x01' + bytes([type_id, version]) + data):
        try:
            decode_metadata_record(frame)
        except MetadataParseError:
            pass
    for control_type in range(2, 7):
        try:
            decode_control_record(struct.pack('>hh', 0, control_type), data)
        except MetadataParseError:
            pass


@settings(max_examples=100, deadline=None, derandomize=True)
@given(cut=st.integers(0, 200))
def test_every_truncation_of_a_real_frame_is_refused(cut: int) -> None:
    record = RegisterBrokerRecord(broker_id=4, incarnation_id=uuid.UUID(int=9), broker_epoch=10, end_points=[
        RegisterBrokerRecord.BrokerEndpoint(name='PLAINTEXT', host='h', port=9092, security_protocol=0)],
        features=[RegisterBrokerRecord.BrokerFeature(name='metadata.version', min_supported_version=1,
                                                     max_supported_version=21)],
        rack='r', fenced=True, in_controlled_shutdown=False, log_dirs=[uuid.UUID(int=7)])
    frame = encode_metadata_record(record, 3)
    if cut >= len(frame):
        assert decode_metadata_record(frame).message.broker_id == 4
        return
    with pytest.raises(MetadataParseError):
        decode_metadata_record(frame[:cut])
