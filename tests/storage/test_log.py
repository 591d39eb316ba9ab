"""Log: leader/follower appends, reads, idempotence, epochs, truncation, retention, flush, recovery."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from records import batch_headers as iter_batches
from records import parse_header
from storage import (
    InvalidProducerEpochError,
    InvalidRecordError,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
)

from .conftest import build_batch

CFG = LogConfig(segment_bytes=2048, index_interval_bytes=256, segment_index_bytes=4096)
NOW = 1_700_000_000_000


def _open(tmp_path: Path, cfg: LogConfig = CFG, **kw) -> Log:
    return Log.open(tmp_path / "topic-0", cfg, now_ms=NOW, **kw)


def _decode(data: bytes) -> list[tuple[int, int, bytes]]:
    """(offset, partition leader epoch, value) of every record, via kafka-python's reader."""
    out = []
    records = MemoryRecords(data)
    while (b := records.next_batch()) is not None:
        assert b.validate_crc()
        for r in b:
            out.append((r.offset, b.leader_epoch, bytes(r.value)))
    return out


def _read_all(lg: Log, start: int = 0) -> bytes:
    out = b""
    offset = start
    while offset < lg.log_end_offset:
        info = lg.read(offset, 1 << 20)
        data = info.records.read()
        out += data
        offset = iter_batches(data)[-1][1].next_offset
    return out


def test_leader_appends_assign_offsets_readable_by_kafka_python(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    values = []
    for i in range(40):
        b = build_batch(3, value_size=30, seed=i, timestamp=NOW + i)
        values += [bytes((i + k + j) % 251 for j in range(30)) for k in range(3)]
        info = lg.append_as_leader(b, 7, now_ms=NOW)
        assert (info.first_offset, info.last_offset) == (i * 3, i * 3 + 2)
        assert info.records_count == 3 and info.max_timestamp == NOW + i + 2
    assert lg.log_end_offset == 120
    assert len(lg.segments) > 1  # rolled on segment.bytes
    decoded = _decode(_read_all(lg))
    assert [o for o, _, _ in decoded] == list(range(120))
    assert all(epoch == 7 for _, epoch, _ in decoded)
    assert [v for _, _, v in decoded] == values
    assert lg.leader_epoch_cache.entries() == [(7, 0)]


def test_segment_files_named_by_base_offset(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    names = sorted(p.name for p in lg.dir.glob("*.log"))
    assert names == [f"{s.base_offset:020d}.log" for s in lg.segments]
    for seg in lg.segments[1:]:
        assert iter_batches(seg.read_all())[0][1].base_offset == seg.base_offset


def test_read_bounds(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(10):
        lg.append_as_leader(build_batch(2, seed=i), 0, now_ms=NOW)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(21, 100)
    assert lg.read(20, 100).records is None  # at the log end offset: no data
    assert lg.read(10, 100, max_offset=10).records is None  # consumer at the high watermark
    info = lg.read(3, 10_000, max_offset=8)
    assert [o for o, _, _ in _decode(info.records.read())] == [2, 3, 4, 5, 6, 7]
    assert info.records.fileno == lg.segments[0].fd  # a slice of the segment file, not a copy


def test_read_never_spans_segments(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    first = lg.segments[0]
    info = lg.read(0, 1 << 20)
    assert info.records.length == first.size
    assert lg.read(first.next_offset, 1 << 20).records.path == str(lg.segments[1].log_path)


def test_log_append_time_rewrites_attributes_and_crc(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    info = lg.append_as_leader(build_batch(2, timestamp=5), 0, now_ms=NOW, log_append_time=NOW)
    assert info.log_append_time == NOW and info.max_timestamp == NOW
    data = lg.read(0, 1000).records.read()
    b = MemoryRecords(data).next_batch()
    assert b.validate_crc()
    assert b.timestamp_type == 1
    assert [r.timestamp for r in b] == [NOW, NOW]


def test_record_too_large(tmp_path: Path) -> None:
    lg = _open(tmp_path, dataclasses.replace(CFG, max_message_bytes=100))
    with pytest.raises(RecordTooLargeError):
        lg.append_as_leader(build_batch(5, value_size=50), 0, now_ms=NOW)
    assert lg.log_end_offset == 0


def test_idempotent_producer(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    pid, epoch = 1000, 0

    def b(seq: int, n: int = 2, ep: int = epoch) -> bytearray:
        return build_batch(n, producer_id=pid, producer_epoch=ep, base_sequence=seq)

    lg.append_as_leader(b(0), 0, now_ms=NOW)
    second = lg.append_as_leader(b(2), 0, now_ms=NOW)
    assert (second.first_offset, second.last_offset) == (2, 3)
    dup = lg.append_as_leader(b(0), 0, now_ms=NOW)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (0, 1)
    assert lg.log_end_offset == 4  # nothing written
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(b(7), 0, now_ms=NOW)
    lg.append_as_leader(b(0, ep=1), 0, now_ms=NOW)  # epoch bump restarts at 0
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(b(4, ep=0), 0, now_ms=NOW)
    with pytest.raises(OutOfOrderSequenceError):
        lg.append_as_leader(b(5, ep=2), 0, now_ms=NOW)  # new epoch must start at 0
    entry = lg.producer_state.last_entry(pid)
    assert entry.producer_epoch == 1 and entry.last_seq == 1


def test_producer_state_survives_restart_and_truncation(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    pid = 77
    for i in range(30):
        lg.append_as_leader(
            build_batch(3, producer_id=pid, producer_epoch=0, base_sequence=i * 3, value_size=30),
            0,
            now_ms=NOW,
        )
    lg.close()
    assert list(lg.dir.glob("*.snapshot"))
    lg = _open(tmp_path, had_clean_shutdown=True)
    assert lg.producer_state.last_entry(pid).last_seq == 89
    dup = lg.append_as_leader(build_batch(3, producer_id=pid, producer_epoch=0, base_sequence=87), 0, now_ms=NOW)
    assert dup.duplicate and dup.first_offset == 87
    lg.truncate_to(60)
    assert lg.producer_state.last_entry(pid).last_seq == 59
    info = lg.append_as_leader(build_batch(3, producer_id=pid, producer_epoch=0, base_sequence=60), 0, now_ms=NOW)
    assert info.first_offset == 60 and not info.duplicate


def test_follower_append_keeps_offsets_and_epochs(tmp_path: Path) -> None:
    leader = _open(tmp_path)
    for i in range(6):
        leader.append_as_leader(build_batch(2, seed=i), 3 if i < 3 else 5, now_ms=NOW)
    data = leader.read(0, 1 << 20).records.read()
    follower = Log.open(tmp_path / "follower" / "topic-0", CFG)
    info = follower.append_as_follower(memoryview(data))
    assert (info.first_offset, info.last_offset) == (0, 11)
    assert follower.log_end_offset == 12
    assert follower.leader_epoch_cache.entries() == [(3, 0), (5, 6)]
    assert follower.read(0, 1 << 20).records.read() == data
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(memoryview(data))  # offsets below the log end offset


def test_truncate_to_and_epoch_cache(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), i // 10, now_ms=NOW)
    assert lg.leader_epoch_cache.entries() == [(0, 0), (1, 30), (2, 60), (3, 90)]
    lg.truncate_to(45)
    assert lg.log_end_offset == 45
    assert lg.leader_epoch_cache.entries() == [(0, 0), (1, 30)]
    assert [o for o, _, _ in _decode(_read_all(lg))] == list(range(45))
    info = lg.append_as_leader(build_batch(1), 4, now_ms=NOW)
    assert info.first_offset == 45
    assert lg.leader_epoch_cache.end_offset_for(1, lg.log_end_offset) == (1, 45)
    lg.truncate_to(1000)  # beyond the end: nothing
    assert lg.log_end_offset == 46


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(20):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 1, now_ms=NOW)
    lg.truncate_fully_and_start_at(500)
    assert (lg.log_start_offset, lg.log_end_offset) == (500, 500)
    assert [s.base_offset for s in lg.segments] == [500]
    assert lg.leader_epoch_cache.entries() == []
    assert lg.append_as_leader(build_batch(1), 2, now_ms=NOW).first_offset == 500
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(10, 100)


def test_delete_records_moves_log_start_and_deletes_segments(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    second_base = lg.segments[1].base_offset
    assert lg.maybe_increment_log_start_offset(second_base + 1)
    assert lg.log_start_offset == second_base + 1
    assert lg.segments[0].base_offset == second_base
    assert not lg.maybe_increment_log_start_offset(3)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(second_base, 100)
    data = lg.read(second_base + 1, 1 << 20).records.read()
    assert _decode(data)[0][0] == second_base  # the whole batch containing the start offset
    assert list(lg.dir.glob("*.log.deleted"))
    lg.delete_expired_files(int(time.time() * 1000) + lg.config.file_delete_delay_ms)
    assert not list(lg.dir.glob("*.deleted"))


def test_retention_by_time_and_size(tmp_path: Path) -> None:
    cfg = dataclasses.replace(CFG, retention_ms=1000, file_delete_delay_ms=0)
    lg = _open(tmp_path, cfg)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i, timestamp=NOW + i * 100), 0, now_ms=NOW)
    n = len(lg.segments)
    first_max = lg.segments[0].max_timestamp_so_far
    assert lg.delete_retention_segments(first_max + 1001) == 1  # only the first is older than retention.ms
    assert all(s.max_timestamp_so_far > first_max for s in lg.segments)
    assert lg.log_start_offset == lg.segments[0].base_offset
    lg.delete_expired_files(NOW)
    assert len(list(lg.dir.glob("*.log"))) == len(lg.segments) < n
    # everything expired, but only up to the high watermark
    assert lg.delete_retention_segments(NOW + 10**7, high_watermark=lg.segments[1].base_offset) == 1
    deleted = lg.delete_retention_segments(NOW + 10**7)
    assert deleted >= 1 and lg.log_start_offset == lg.log_end_offset == 120
    assert lg.append_as_leader(build_batch(1), 0, now_ms=NOW).first_offset == 120
    lg2 = _open(tmp_path / "b", dataclasses.replace(CFG, retention_bytes=3000))
    for i in range(40):
        lg2.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    lg2.delete_retention_segments(NOW)
    assert lg2.size_in_bytes() >= 3000 - 2048 and lg2.size_in_bytes() - lg2.segments[0].size < 3000


def test_compact_policy_skips_time_retention(tmp_path: Path) -> None:
    lg = _open(tmp_path, dataclasses.replace(CFG, retention_ms=1, cleanup_policy="compact"))
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i, timestamp=NOW), 0, now_ms=NOW)
    assert lg.delete_retention_segments(NOW + 10**9) == 0


def test_offset_for_timestamp_compressed_batch_answers_with_batch(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(5):
        lg.append_as_leader(
            build_batch(4, value_size=100, timestamp=NOW + i * 10, compression=1, compressible=True), 0, now_ms=NOW
        )
    assert lg.offset_for_timestamp(NOW + 11) == (4, NOW + 13, 0)


def test_offset_for_timestamp_and_max_timestamp(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i, timestamp=NOW + i * 10), i // 20, now_ms=NOW)
    assert lg.offset_for_timestamp(NOW) == (0, NOW, 0)
    assert lg.offset_for_timestamp(NOW + 251) == (76, NOW + 251, 1)  # exact record inside batch 75..77
    assert lg.offset_for_timestamp(NOW + 253) == (78, NOW + 260, 1)
    assert lg.offset_for_timestamp(NOW + 10**6) is None
    assert lg.max_timestamp_and_offset() == (NOW + 392, 119)


def test_flush_advances_recovery_point_and_needs_flush(tmp_path: Path) -> None:
    lg = _open(tmp_path, dataclasses.replace(CFG, flush_messages=10))
    for i in range(4):
        lg.append_as_leader(build_batch(2, seed=i), 0, now_ms=NOW)
    assert not lg.needs_flush()
    lg.append_as_leader(build_batch(2), 0, now_ms=NOW)
    assert lg.needs_flush()
    lg.flush()
    assert lg.recovery_point == 10 and not lg.needs_flush()
    lg.append_as_leader(build_batch(2), 0, now_ms=NOW)
    lg.flush(up_to_offset=11)
    assert lg.recovery_point == 11


def test_clean_reopen_restores_everything(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 2, now_ms=NOW)
    before = _read_all(lg)
    lg.close()
    lg = _open(tmp_path, had_clean_shutdown=True, recovery_point=120)
    assert lg.log_end_offset == 120 and lg.recovery_point == 120
    assert _read_all(lg) == before
    assert lg.append_as_leader(build_batch(1), 2, now_ms=NOW).first_offset == 120


def test_corrupt_batch_truncates_with_one_log_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    seg = lg.segments[1]
    positions = [p for p, _ in iter_batches(seg.read_all())]
    victim_offset = parse_header(seg.read_all(), positions[2]).base_offset
    lg.close_handles()
    data = bytearray(seg.log_path.read_bytes())
    data[positions[2] + 80] ^= 0x01
    seg.log_path.write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="storage.log"):
        lg = _open(tmp_path, recovery_point=0)
    lines = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert len(lines) == 1
    assert seg.log_path.name in lines[0] and str(victim_offset) in lines[0] and "CRC" in lines[0]
    assert lg.log_end_offset == victim_offset
    assert len(lg.segments) == 2
    assert [o for o, _, _ in _decode(_read_all(lg))] == list(range(victim_offset))
    assert lg.append_as_leader(build_batch(1), 0, now_ms=NOW).first_offset == victim_offset


def test_missing_and_corrupt_index_rebuilt(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    entries = [s.offset_index.all_entries() for s in lg.segments]
    lg.close()
    (lg.dir / f"{lg.segments[0].base_offset:020d}.index").unlink()
    (lg.dir / f"{lg.segments[1].base_offset:020d}.index").write_bytes(b"\x00\x00\x00\x05" * 3)
    lg = _open(tmp_path, had_clean_shutdown=True, recovery_point=120)
    assert [s.offset_index.all_entries() for s in lg.segments] == entries
    for offset in range(0, 120, 7):
        assert _decode(lg.read(offset, 1).records.read())[-1][0] >= offset


def test_swap_leftovers_resolved_on_open(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    first = lg.segments[0]
    original = first.read_all()
    lg.close()
    d = lg.dir
    # a crash after the cleaned copy became .swap, before the old segment was renamed
    for ext in (".log", ".index", ".timeindex"):
        src = d / f"{first.base_offset:020d}{ext}"
        (d / f"{first.base_offset:020d}{ext}.swap").write_bytes(src.read_bytes())
    (d / "00000000000000000099.log.cleaned").write_bytes(b"junk")
    lg = _open(tmp_path, had_clean_shutdown=True)
    assert not list(d.glob("*.swap")) and not list(d.glob("*.cleaned"))
    assert lg.segments[0].read_all() == original
    assert lg.log_end_offset == 120


def test_replace_segments_swaps_in_new_files(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(40):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)
    old = lg.segments[:2]
    from storage import LogSegment

    cleaned = LogSegment.open(lg.dir, old[0].base_offset, lg.config, file_suffix=".cleaned")
    keep = iter_batches(old[1].read_all())
    data = old[1].read_all()
    for pos, h in keep[-2:]:
        cleaned.append(data[pos : pos + h.size])
    lg.replace_segments([cleaned], old)
    assert lg.segments[0] is cleaned and cleaned.log_path.name == f"{old[0].base_offset:020d}.log"
    assert len(list(lg.dir.glob("*.log.deleted"))) == 2  # both old segments, though base 0's name is reused
    remaining = _decode(lg.read(0, 1 << 20).records.read())
    assert remaining[0][0] == keep[-2][1].base_offset
    lg.close()
    lg = _open(tmp_path, had_clean_shutdown=True)
    assert lg.segments[0].read_all() == b"".join(data[p : p + h.size] for p, h in keep[-2:])


def test_delete_renames_directory(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    lg.append_as_leader(build_batch(1), 0, now_ms=NOW)
    target = lg.delete()
    assert target.name.startswith("topic-0.") and target.name.endswith("-delete")
    assert not (tmp_path / "topic-0").exists()


def test_roll_by_time(tmp_path: Path) -> None:
    lg = _open(tmp_path, dataclasses.replace(CFG, segment_bytes=10**6, segment_ms=1000))
    lg.append_as_leader(build_batch(1, timestamp=NOW), 0, now_ms=NOW)
    lg.append_as_leader(build_batch(1, timestamp=NOW), 0, now_ms=NOW + 500)
    assert len(lg.segments) == 1
    lg.append_as_leader(build_batch(1, timestamp=NOW + 1), 0, now_ms=NOW + 1500)
    assert [s.base_offset for s in lg.segments] == [0, 2]
    assert (lg.dir / "00000000000000000002.snapshot").exists()


def test_topic_id_persisted(tmp_path: Path) -> None:
    import uuid

    tid = uuid.uuid4()
    lg = _open(tmp_path, topic_id=tid)
    lg.close()
    assert _open(tmp_path, had_clean_shutdown=True).topic_id == tid
    with pytest.raises(ValueError):
        _open(tmp_path / "x", topic_id=tid).assign_topic_id(uuid.uuid4())


def test_flush_from_worker_thread_while_appending(tmp_path: Path) -> None:
    import threading

    lg = _open(tmp_path)
    stop = threading.Event()

    def flusher() -> None:
        while not stop.is_set():
            lg.flush()

    t = threading.Thread(target=flusher)
    t.start()
    try:
        deadline = time.monotonic() + 1.0
        i = 0
        while time.monotonic() < deadline and i < 300:
            lg.append_as_leader(build_batch(2, value_size=30, seed=i), 0, now_ms=NOW)
            i += 1
    finally:
        stop.set()
        t.join()
    lg.flush()
    assert lg.recovery_point == lg.log_end_offset == 2 * i
    assert [o for o, _, _ in _decode(_read_all(lg))] == list(range(2 * i))
    assert os.path.exists(lg.segments[-1].log_path)


def test_roll_when_index_full_and_indexes_preallocated_then_trimmed(tmp_path: Path) -> None:
    cfg = dataclasses.replace(CFG, segment_bytes=10**6, index_interval_bytes=0, segment_index_bytes=64)
    lg = _open(tmp_path, cfg)
    active = lg.segments[0]
    assert active.offset_index.path.stat().st_size == 64 and active.time_index.path.stat().st_size == 60
    for i in range(12):
        lg.append_as_leader(build_batch(1, seed=i, timestamp=NOW + i), 0, now_ms=NOW)
    assert len(lg.segments) >= 2  # the time index (4 usable slots of 5) filled up first
    first = lg.segments[0]
    assert first.offset_index.path.stat().st_size == 8 * first.offset_index.entries  # trimmed on roll
    assert first.time_index.path.stat().st_size == 12 * first.time_index.entries
    assert [o for o, _, _ in _decode(_read_all(lg))] == list(range(12))


def test_truncate_below_log_start_restarts_the_log(tmp_path: Path) -> None:
    lg = _open(tmp_path)
    for i in range(10):
        lg.append_as_leader(build_batch(2, seed=i), 0, now_ms=NOW)
    lg.maybe_increment_log_start_offset(8)
    lg.truncate_to(5)
    assert (lg.log_start_offset, lg.log_end_offset) == (5, 5)
    assert lg.read(5, 100).records is None
    assert lg.append_as_leader(build_batch(1), 1, now_ms=NOW).first_offset == 5


def test_max_timestamp_is_the_first_record_carrying_it_not_its_batchs_last(tmp_path: Path) -> None:
    # confluent-kafka's own ListOffsets test: one batch of records stamped 100, 400, 200; Kafka 4.4 answers
    # MAX_TIMESTAMP with offset 1 (RecordBatch.offsetOfMaxTimestamp), not the batch's last offset 2.
    def stamped(*timestamps: int) -> bytearray:
        builder = MemoryRecordsBuilder(2, 0, batch_size=1 << 30)
        for ts in timestamps:
            builder.append(NOW + ts, b"k", b"v")
        builder.close()
        return bytearray(builder.buffer())

    lg = _open(tmp_path)
    lg.append_as_leader(stamped(100, 400, 200, 400), 0, now_ms=NOW)
    assert lg.max_timestamp_and_offset() == (NOW + 400, 1)
    lg.append_as_leader(stamped(50, 60), 0, now_ms=NOW)
    assert lg.max_timestamp_and_offset() == (NOW + 400, 1)
