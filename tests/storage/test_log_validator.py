"""Kafka's LogValidator in storage: every error a leader append can raise, with Kafka's error and nothing
written; compacted topics' per-record errors (KIP-467); LogAppendTime written with one CRC computation."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

import records.header
import records.validation
from protocol.errors import ErrorCode
from records import Compression, ControlRecordType, RecordBatch, TimestampType, build_batch, build_control_batch
from records.legacy import build_message_set
from storage import Log, LogConfig
from storage.errors import (
    CorruptRecordError,
    InvalidRecordError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    StorageError,
)
from storage.log_validator import AppendOrigin

from .conftest import build_batch as producer_batch

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=1024, segment_index_bytes=8192)
COMPACTED = dataclasses.replace(CFG, cleanup_policy="compact")


def _open(tmp_path: Path, cfg: LogConfig = CFG) -> Log:
    return Log.open(tmp_path / "orders-0", cfg, now_ms=NOW)


def _rejected(lg: Log, records: bytes | bytearray, error: type[StorageError], kafka_error: str,
              **kw: object) -> StorageError:
    """Append, expect ``error`` with Kafka's error name, and check that nothing reached the log."""
    size_before, leo_before = lg.active_segment.size, lg.log_end_offset
    with pytest.raises(error) as info:
        lg.append_as_leader(bytearray(records), 5, now_ms=NOW, **kw)
    assert type(info.value) is error and info.value.kafka_error == kafka_error
    assert str(lg.topic_partition) in str(info.value)
    assert (lg.active_segment.size, lg.log_end_offset) == (size_before, leo_before)
    return info.value


def test_every_kafka_error_name_is_an_error_code() -> None:
    pending, seen = [StorageError], []
    while pending:
        cls = pending.pop()
        seen.append(cls)
        assert cls.kafka_error in ErrorCode.__members__, cls
        pending.extend(cls.__subclasses__())
    assert len(seen) >= 12


def test_empty_records_and_magic(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    _rejected(lg, b"", InvalidRecordError, "INVALID_RECORD")
    legacy = build_message_set([(0, NOW, b"k", b"v")], magic=1)  # the broker up-converts these first
    _rejected(lg, legacy, InvalidRecordError, "INVALID_RECORD")
    unknown = bytearray(producer_batch(2))
    unknown[16] = 3
    _rejected(lg, unknown, CorruptRecordError, "CORRUPT_MESSAGE")


def test_damaged_bytes_are_corrupt_message(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    flipped = producer_batch(3, value_size=40)
    flipped[-5] ^= 0x01
    error = _rejected(lg, flipped, CorruptRecordError, "CORRUPT_MESSAGE")
    assert "CRC" in str(error)
    _rejected(lg, producer_batch(3)[:-1], CorruptRecordError, "CORRUPT_MESSAGE")  # truncated
    short = producer_batch(1)
    struct.pack_into(">i", short, 8, 40)  # a batch length below the 49-byte minimum
    _rejected(lg, short, CorruptRecordError, "CORRUPT_MESSAGE")


def test_sizes_message_too_large_and_record_list_too_large(tmp_path: Path) -> None:
    lg = _open(tmp_path, dataclasses.replace(CFG, max_message_bytes=500))
    _rejected(lg, producer_batch(5, value_size=200), RecordTooLargeError, "MESSAGE_TOO_LARGE")
    lg.append_as_leader(producer_batch(2, value_size=100), 0, now_ms=NOW)  # within both limits
    lg = Log.open(tmp_path / "small-0", dataclasses.replace(CFG, segment_bytes=1000, max_message_bytes=10_000))
    _rejected(lg, producer_batch(4, value_size=400), RecordBatchTooLargeError, "RECORD_LIST_TOO_LARGE")


def test_client_rules(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    two = producer_batch(1) + producer_batch(1)
    _rejected(lg, two, InvalidRecordError, "INVALID_RECORD")  # one v2 batch per client request
    not_zero = bytearray(producer_batch(2))
    struct.pack_into(">q", not_zero, 0, 10)
    _rejected(lg, not_zero, InvalidRecordError, "INVALID_RECORD")
    control = build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0,
                                  timestamp=NOW)
    _rejected(lg, control, InvalidRecordError, "INVALID_RECORD")
    no_sequence = build_batch([(b"k", b"v", [], NOW)], producer_id=3, producer_epoch=0, base_sequence=-1)
    _rejected(lg, no_sequence, InvalidRecordError, "INVALID_RECORD")
    gap = build_batch([(b"k", b"v", [], NOW)] * 2, offset_deltas=[0, 4])
    _rejected(lg, gap, InvalidRecordError, "INVALID_RECORD")
    # The broker's own writes (group metadata, transaction markers) are not a client's.
    info = lg.append_as_leader(bytearray(two + control), 5, now_ms=NOW, origin=AppendOrigin.COORDINATOR)
    assert (info.first_offset, info.last_offset, lg.log_end_offset) == (0, 2, 3)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.LZ4])
def test_compacted_topic_rejects_keyless_records_with_record_errors(tmp_path: Path, codec: Compression) -> None:
    lg = _open(tmp_path, COMPACTED)
    rows = [(b"a", b"1", [], NOW), (None, b"2", [], NOW), (b"c", None, [], NOW), (None, b"4", [], NOW)]
    error = _rejected(lg, build_batch(rows, compression=codec), InvalidRecordError, "INVALID_RECORD")
    message = "Compacted topic cannot accept message without key in topic partition orders-0."
    assert error.record_errors == [(1, message), (3, message)]
    assert str(error) == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first "
        f"three errors at most: [RecordError(batchIndex=1, message='{message}'), "
        f"RecordError(batchIndex=3, message='{message}')]"
    )
    keyed = build_batch([(b"a", b"1", [], NOW), (b"c", None, [], NOW)], compression=codec)  # a tombstone is fine
    assert lg.append_as_leader(bytearray(keyed), 5, now_ms=NOW).last_offset == 1
    # The same keyless batch is fine where nothing is compacted.
    assert _open(tmp_path / "plain").append_as_leader(bytearray(build_batch(rows)), 5, now_ms=NOW).last_offset == 3


def _count_crc32c(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    for module in (records.header, records.validation):
        real = module.crc32c

        def counting(data: memoryview, _real=real) -> int:
            calls.append(len(data))
            return _real(data)

        monkeypatch.setattr(module, "crc32c", counting)
    return calls


@pytest.mark.parametrize("codec", [0, 1])  # none, gzip: what kafka-python reads back without extras
def test_log_append_time_written_with_one_crc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              codec: int) -> None:
    lg = _open(tmp_path, dataclasses.replace(CFG, message_timestamp_type="LogAppendTime"))
    sent = producer_batch(3, value_size=50, timestamp=NOW - 5000, compression=codec)
    calls = _count_crc32c(monkeypatch)
    info = lg.append_as_leader(bytearray(sent), 5, now_ms=NOW + 7)
    # One CRC pass checks the producer's bytes, one covers the rewritten attributes and max timestamp.
    assert calls == [len(sent) - 21, len(sent) - 21]
    assert (info.log_append_time, info.max_timestamp) == (NOW + 7, NOW + 7)
    stored = lg.read(0, 1 << 20).records.read()
    theirs = MemoryRecords(stored).next_batch()
    assert theirs.validate_crc() and theirs.timestamp_type == 1 and theirs.leader_epoch == 5
    assert [r.timestamp for r in theirs] == [NOW + 7] * 3
    ours = RecordBatch(memoryview(stored))
    assert ours.is_valid() and ours.timestamp_type == TimestampType.LOG_APPEND_TIME
    # A batch that already carries that log append time (as the broker used to stamp it) costs no second CRC.
    stamped = bytearray(sent)
    RecordBatch(memoryview(stamped)).set_max_timestamp(TimestampType.LOG_APPEND_TIME, NOW + 9)
    calls.clear()
    lg.append_as_leader(stamped, 5, now_ms=NOW + 9)
    assert calls == [len(sent) - 21]
    assert RecordBatch(memoryview(lg.read(3, 1 << 20).records.read())).is_valid()


def test_create_time_batches_are_patched_outside_the_crc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lg = _open(tmp_path)
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20, offset=0)
    for i in range(4):
        builder.append(NOW + i, b"k", b"v%d" % i)
    builder.close()
    sent = bytes(builder.buffer())
    calls = _count_crc32c(monkeypatch)
    lg.append_as_leader(bytearray(sent), 9, now_ms=NOW)
    assert len(calls) == 1  # the check; base offset and leader epoch are outside the CRC
    stored = lg.read(0, 1 << 20).records.read()
    assert stored[21:] == sent[21:] and RecordBatch(memoryview(stored)).is_valid()
