"""__consumer_offsets record formats: golden bytes from Kafka's message specs, round trips, bad input."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.coordinator.group.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from broker.coordinator.runtime import java_string_hashcode, partition_for


def s16(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_offset_commit_key_golden_bytes() -> None:
    raw = encode_offset_commit_key(OffsetCommitKey("g", "topic", 7))
    assert raw == b"\x00\x01" + s16("g") + s16("topic") + b"\x00\x00\x00\x07"
    assert decode_key(raw) == OffsetCommitKey("g", "topic", 7)
    # Version 0 keys have the same layout.
    assert decode_key(b"\x00\x00" + raw[2:]) == OffsetCommitKey("g", "topic", 7)


def test_group_metadata_key_golden_bytes() -> None:
    raw = encode_group_metadata_key(GroupMetadataKey("my-group"))
    assert raw == b"\x00\x02" + s16("my-group")
    assert decode_key(raw) == GroupMetadataKey("my-group")


def test_keys_of_other_coordinators_are_skipped_not_errors() -> None:
    # Key version 3+ are KIP-848 consumer group / share group / transaction records.
    assert decode_key(b"\x00\x03" + s16("g")) is None
    assert decode_key(b"\x00\x0b" + s16("g")) is None


def test_offset_commit_value_v3_golden_bytes() -> None:
    value = OffsetCommitValue(offset=42, leader_epoch=5, metadata="meta", commit_timestamp=1700000000000)
    raw = encode_offset_commit_value(value)
    assert raw == (b"\x00\x03" + struct.pack(">qi", 42, 5) + s16("meta") + struct.pack(">q", 1700000000000))
    assert decode_offset_commit_value(raw) == value


def test_offset_commit_value_with_expire_timestamp_is_version_1() -> None:
    value = OffsetCommitValue(offset=1, leader_epoch=-1, metadata="", commit_timestamp=10,
                              expire_timestamp=20)
    raw = encode_offset_commit_value(value)
    assert raw == b"\x00\x01" + struct.pack(">q", 1) + s16("") + struct.pack(">qq", 10, 20)
    assert decode_offset_commit_value(raw) == value


def test_offset_commit_value_v0_and_flexible_v4() -> None:
    v0 = b"\x00\x00" + struct.pack(">q", 9) + s16("m") + struct.pack(">q", 5)
    assert decode_offset_commit_value(v0) == OffsetCommitValue(9, -1, "m", 5, -1)
    # v4: compact string (uvarint length+1) and an empty tagged-field section; plus one unknown tag.
    v4 = (b"\x00\x04" + struct.pack(">qi", 9, 3) + b"\x02m" + struct.pack(">q", 5)
          + b"\x01" + b"\x05" + b"\x02" + b"zz")
    assert decode_offset_commit_value(v4) == OffsetCommitValue(9, 3, "m", 5, -1)


def sample_group_value() -> GroupMetadataValue:
    return GroupMetadataValue(
        protocol_type="consumer", generation=3, protocol="range", leader="m-1",
        current_state_timestamp=1234,
        members=(
            MemberMetadataValue("m-1", None, "c1", "/10.0.0.1", 30000, 10000, b"sub1", b"asg1"),
            MemberMetadataValue("m-2", "instance-2", "c2", "/10.0.0.2", 30000, 10000, b"sub2", b""),
        ))


def test_group_metadata_value_v3_golden_bytes_and_round_trip() -> None:
    value = sample_group_value()
    raw = encode_group_metadata_value(value)
    expected = (b"\x00\x03" + s16("consumer") + struct.pack(">i", 3) + s16("range") + s16("m-1")
                + struct.pack(">q", 1234) + struct.pack(">i", 2)
                + s16("m-1") + b"\xff\xff" + s16("c1") + s16("/10.0.0.1") + struct.pack(">ii", 30000, 10000)
                + struct.pack(">i", 4) + b"sub1" + struct.pack(">i", 4) + b"asg1"
                + s16("m-2") + s16("instance-2") + s16("c2") + s16("/10.0.0.2")
                + struct.pack(">ii", 30000, 10000) + struct.pack(">i", 4) + b"sub2" + struct.pack(">i", 0))
    assert raw == expected
    assert decode_group_metadata_value(raw) == value


def test_group_metadata_value_v0_uses_session_timeout_as_rebalance_timeout() -> None:
    raw = (b"\x00\x00" + s16("consumer") + struct.pack(">i", 1) + b"\xff\xff" + b"\xff\xff"
           + struct.pack(">i", 1) + s16("m") + s16("c") + s16("h") + struct.pack(">i", 6000)
           + struct.pack(">i", 0) + struct.pack(">i", 0))
    value = decode_group_metadata_value(raw)
    assert value.protocol is None and value.leader is None and value.current_state_timestamp == -1
    assert value.members == (MemberMetadataValue("m", None, "c", "h", 6000, 6000, b"", b""),)


def test_group_metadata_value_flexible_v4() -> None:
    raw = (b"\x00\x04" + b"\x09consumer" + struct.pack(">i", 2) + b"\x06range" + b"\x00"
           + struct.pack(">q", 77) + b"\x02"  # one member
           + b"\x02m" + b"\x00" + b"\x02c" + b"\x02h" + struct.pack(">ii", 100, 200) + b"\x03ab" + b"\x01"
           + b"\x00"  # member tagged fields
           + b"\x00")  # top-level tagged fields
    value = decode_group_metadata_value(raw)
    assert value == GroupMetadataValue("consumer", 2, "range", None, 77,
                                       (MemberMetadataValue("m", None, "c", "h", 100, 200, b"ab", b""),))


@pytest.mark.parametrize("raw", [
    b"",
    b"\x00",
    b"\x00\x01" + s16("g"),  # truncated offset key
    b"\x00\x02" + b"\x00\x05ab",  # string longer than the data
    b"\xff\xff" + s16("g"),  # negative version
    b"\x00\x02" + s16("g") + b"extra",  # trailing bytes
])
def test_bad_keys_raise_schema_error(raw: bytes) -> None:
    with pytest.raises(SchemaError):
        decode_key(raw)


def test_huge_array_count_is_rejected_before_allocating() -> None:
    raw = (b"\x00\x03" + s16("consumer") + struct.pack(">i", 1) + b"\xff\xff" + b"\xff\xff"
           + struct.pack(">q", 0) + struct.pack(">i", 2_000_000_000))
    with pytest.raises(SchemaError):
        decode_group_metadata_value(raw)


def test_unknown_value_versions_and_null_required_string() -> None:
    with pytest.raises(SchemaError):
        decode_offset_commit_value(b"\x00\x05" + bytes(30))
    with pytest.raises(SchemaError):
        decode_group_metadata_value(b"\x00\x03" + b"\xff\xff" + bytes(20))


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=80))
def test_arbitrary_bytes_never_raise_anything_but_schema_error(raw: bytes) -> None:
    for decode in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        try:
            decode(raw)
        except SchemaError:
            pass


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40), st.integers(0, 2**31 - 1),
       st.integers(-1, 2**63 - 1), st.integers(-1, 2**31 - 1), st.text(max_size=100))
def test_offset_records_round_trip(group: str, topic: str, partition: int, offset: int, epoch: int,
                                   metadata: str) -> None:
    key = OffsetCommitKey(group, topic, partition)
    assert decode_key(encode_offset_commit_key(key)) == key
    value = OffsetCommitValue(offset, epoch, metadata, 1, -1)
    assert decode_offset_commit_value(encode_offset_commit_value(value)) == value


def test_java_string_hashcode_known_values() -> None:
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("polygenelubricants") == -(2**31)
    assert java_string_hashcode("é") == 233
    # Java hashes UTF-16 code units: a surrogate pair counts as two.
    assert java_string_hashcode("\U0001F600") == 0xD83D * 31 + 0xDE00
    assert java_string_hashcode("Aa") == java_string_hashcode("BB") == 2112


def test_partition_for_matches_kafka_utils_abs() -> None:
    assert partition_for("hello", 50) == 99162322 % 50
    # Integer.MIN_VALUE: Utils.abs gives 0 (Math.abs would stay negative).
    assert partition_for("polygenelubricants", 50) == 0
    negative = "console-consumer-1"
    h = java_string_hashcode(negative)
    assert partition_for(negative, 50) == abs(h) % 50
    assert all(0 <= partition_for(f"group-{i}", 7) < 7 for i in range(200))
