"""LogCleaner.clean on real logs in temp dirs: survivors, offsets, tombstones, transactions, crash safety."""

from __future__ import annotations

import dataclasses
import io
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from records import Record, batch_headers
from storage import dump_log as dl
from storage.checkpoints import OffsetCheckpointFile
from storage.cleaner import CLEANER_CHECKPOINT, CleanerError, LogCleaner
from storage.config import LogConfig
from storage.log import Log
from storage.values import TopicPartition

from .conftest import encode_batch

REPO = Path(__file__).resolve().parents[2]
T0 = int(time.time() * 1000) - 60_000  # recent: old timestamps would roll a segment per append (segment.ms)
DAY_MS = 86_400_000
COMPACT = LogConfig(cleanup_policy="compact", segment_index_bytes=64 * 1024, index_interval_bytes=256,
                    min_cleanable_dirty_ratio=0.0)


def now_ms() -> int:
    return int(time.time() * 1000)


def kp_batch(kvs: list[tuple[bytes | None, bytes | None]], *, codec: int = 0, pid: int = -1, seq: int = -1,
             ts: int = T0) -> bytearray:
    b = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20, offset=0, producer_id=pid,
                             producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)
    for i, (k, v) in enumerate(kvs):
        b.append(ts + i, k, v)
    b.close()
    return bytearray(b.buffer())


def open_log(root: Path, config: LogConfig = COMPACT) -> Log:
    return Log.open(root / "orders-0", config, now_ms=now_ms())


def read_all(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """Everything a consumer gets from offset log_start_offset on, through Log.read and kafka-python."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 30)
        if info.records is None:
            break
        last = offset - 1
        for batch in MemoryRecords(bytearray(info.records.read())):
            assert batch.validate_crc()
            out.extend((r.offset, r.key, r.value) for r in batch if r.offset >= offset)
            last = batch.base_offset + batch.last_offset_delta
        offset = last + 1
    return out


Rec = tuple[int, bytes | None, bytes | None]


def latest_by_key(records: list[Rec]) -> dict[bytes, tuple[int, bytes | None]]:
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for off, k, v in records:
        if k is not None:
            latest[k] = (off, v)
    return latest


def fill(log: Log, rounds: int, keys: int, *, codec: int = 0, start_round: int = 0) -> None:
    """``rounds`` segments, each one batch updating every key, then a roll (keeps an active segment)."""
    for r in range(start_round, start_round + rounds):
        kvs = [(b"key-%d" % k, b"value-%d-%d" % (k, r)) for k in range(keys)]
        log.append_as_leader(kp_batch(kvs, codec=codec), 0, now_ms=now_ms())
        log.roll()


def test_latest_value_per_key_survives_offsets_preserved(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 4, 5, codec=1)
    log.append_as_leader(kp_batch([(b"key-0", b"active")]), 0, now_ms=now_ms())
    before = read_all(log)
    active_bytes = log.active_segment.read_all()
    stats = LogCleaner().clean(log, now_ms())
    assert stats.cleaned, stats.skipped
    assert stats.first_dirty_offset == 0 and stats.end_offset == 20 and stats.map_entries == 5
    after = read_all(log)
    # Every key keeps its latest value at its original offset; nothing else from the cleaned range remains.
    assert latest_by_key(after) == latest_by_key(before)
    assert [o for o, _k, _v in after] == [15, 16, 17, 18, 19, 20]
    assert after[-1] == (20, b"key-0", b"active")
    assert log.active_segment.read_all() == active_bytes
    assert log.log_end_offset == 21 and log.log_start_offset == 0
    checkpoint = OffsetCheckpointFile(tmp_path / CLEANER_CHECKPOINT).read()
    assert checkpoint == {TopicPartition("orders", 0): 20}
    assert stats.records_read == 20 and stats.records_retained == 5
    part = tmp_path / "orders-0"
    assert not list(part.glob("*.cleaned")) and not list(part.glob("*.swap"))
    log.close()
    # Reopened from disk (recovery runs over the cleaned files) the log reads the same.
    reopened = open_log(tmp_path)
    assert read_all(reopened) == after and reopened.log_end_offset == 21
    reopened.close()


def test_second_clean_uses_checkpoint_and_rewrites_clean_section(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 2, 3)
    cleaner = LogCleaner()
    assert cleaner.clean(log, now_ms()).cleaned
    again = cleaner.clean(log, now_ms())
    assert not again.cleaned and "no dirty segments" in (again.skipped or "")
    log.append_as_leader(kp_batch([(b"key-1", b"new")]), 0, now_ms=now_ms())
    log.roll()
    stats = cleaner.clean(log, now_ms())
    assert stats.cleaned and stats.first_dirty_offset == 6 and stats.end_offset == 7
    assert read_all(log) == [(3, b"key-0", b"value-0-1"), (5, b"key-2", b"value-2-1"), (6, b"key-1", b"new")]
    log.close()


def test_tombstones_kept_until_delete_retention_passes(tmp_path: Path) -> None:
    config = LogConfig(cleanup_policy="compact,delete", delete_retention_ms=DAY_MS, segment_index_bytes=4096,
                       min_cleanable_dirty_ratio=0.0)
    log = open_log(tmp_path, config)
    log.append_as_leader(kp_batch([(b"a", b"1"), (b"b", b"1")]), 0, now_ms=now_ms())
    log.append_as_leader(kp_batch([(b"a", None)]), 0, now_ms=now_ms())
    log.roll()
    cleaner = LogCleaner()
    stats = cleaner.clean(log, now_ms())
    assert stats.cleaned and stats.tombstones_removed == 0
    assert read_all(log) == [(1, b"b", b"1"), (2, b"a", None)]  # the tombstone stays visible to consumers
    mtime_ms = int(os.stat(log.segments[0].log_path).st_mtime * 1000)
    log.append_as_leader(kp_batch([(b"c", b"1")]), 0, now_ms=now_ms())
    log.roll()
    # One day later, measured from the cleaned segment's preserved mtime, the tombstone may go.
    stats = cleaner.clean(log, mtime_ms + DAY_MS + 1)
    assert stats.cleaned and stats.tombstones_removed == 1
    assert read_all(log) == [(1, b"b", b"1"), (3, b"c", b"1")]
    log.close()


def test_policy_dirty_ratio_and_compaction_lag_are_honoured(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(cleanup_policy="delete"))
    fill(log, 2, 2)
    assert LogCleaner().clean(log, now_ms()).skipped == "cleanup.policy has no compact"
    log.update_config(dataclasses.replace(COMPACT, min_cleanable_dirty_ratio=0.9))
    cleaner = LogCleaner()
    assert cleaner.clean(log, now_ms()).cleaned  # all dirty: ratio 1.0
    fill(log, 1, 2, start_round=5)
    stats = cleaner.clean(log, now_ms())
    assert not stats.cleaned and 0.0 < stats.dirty_ratio < 0.9 and "dirty ratio" in (stats.skipped or "")
    # min.compaction.lag.ms: batches timestamped "now" are too young to clean.
    log2 = Log.open(tmp_path / "lag-0", dataclasses.replace(COMPACT, min_compaction_lag_ms=DAY_MS),
                    now_ms=now_ms())
    for _ in range(2):
        log2.append_as_leader(kp_batch([(b"k", b"v")], ts=now_ms()), 0, now_ms=now_ms())
        log2.roll()
    stats = cleaner.clean(log2, now_ms())
    assert not stats.cleaned and len(read_all(log2)) == 2
    assert cleaner.clean(log2, now_ms() + 2 * DAY_MS).cleaned
    assert [k for _o, k, _v in read_all(log2)] == [b"k"]
    log.close()
    log2.close()


def test_cleaned_segments_pass_dump_log_verification(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    for r in range(3):
        for k in range(40):  # many small batches so the offset and time indexes get several entries
            log.append_as_leader(kp_batch([(b"k%d" % (k % 7), b"v%d" % r * 20)], ts=T0 + r * 100 + k), 0,
                                 now_ms=now_ms())
        log.roll()
    assert LogCleaner().clean(log, now_ms()).cleaned
    log.close()
    part = tmp_path / "orders-0"
    index_files = sorted(part.glob("*.index")) + sorted(part.glob("*.timeindex"))
    out, err = io.StringIO(), io.StringIO()
    rc = dl.run(sorted(part.glob("*.log")), dl.DumpOptions(deep_iteration=True), out, err)
    assert rc == 0 and "isvalid: false" not in out.getvalue() and "invalid bytes" not in out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    rc = dl.run(index_files, dl.DumpOptions(verify_index_only=True), out, err)
    assert rc == 0 and err.getvalue() == ""


def test_idempotent_producer_last_batch_kept_empty_and_sequence_continues(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(kp_batch([(b"a", b"1"), (b"b", b"1")], pid=77, seq=0), 0, now_ms=now_ms())
    log.append_as_leader(kp_batch([(b"a", b"2"), (b"b", b"2")], pid=77, seq=2), 0, now_ms=now_ms())
    log.roll()
    log.append_as_leader(kp_batch([(b"a", b"3"), (b"b", b"3")]), 0, now_ms=now_ms())
    log.roll()
    assert LogCleaner().clean(log, now_ms()).cleaned
    headers = [h for seg in log.segments[:-1] for _p, h in batch_headers(seg.read_all())]
    # Batch 0 vanished; batch 2 (the producer's last) stays as an empty batch covering offsets 2..3.
    assert [(h.base_offset, h.last_offset, h.records_count, h.base_sequence) for h in headers] == [
        (2, 3, 0, 2), (4, 5, 2, -1)]
    assert read_all(log) == [(4, b"a", b"3"), (5, b"b", b"3")]
    log.close()
    reopened = open_log(tmp_path)  # producer state rebuilt from the cleaned log
    entry = reopened.producer_state.last_entry(77)
    assert entry is not None and entry.last_seq == 3
    info = reopened.append_as_leader(kp_batch([(b"a", b"4")], pid=77, seq=4), 0, now_ms=now_ms())
    assert info.first_offset == 6 and not info.duplicate
    reopened.close()


def test_aborted_transaction_records_removed_markers_kept(tmp_path: Path) -> None:
    def marker(offset: int, pid: int, kind: int) -> bytes:
        rec = Record(offset, T0, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 0))
        return encode_batch([rec], base_offset=offset, is_transactional=True, is_control=True,
                               producer_id=pid, producer_epoch=0)

    def txn(offset: int, pid: int, key: bytes, value: bytes) -> bytes:
        return encode_batch([Record(offset, T0, key, value)], base_offset=offset, is_transactional=True,
                               producer_id=pid, producer_epoch=0, base_sequence=offset)

    log = open_log(tmp_path)
    log.update_high_watermark(0)  # as the partition does when it takes the log
    log.append_as_follower(memoryview(encode_batch([Record(0, T0, b"k", b"committed")], base_offset=0)))
    log.append_as_follower(memoryview(txn(1, 5, b"k", b"aborted")))
    log.append_as_follower(memoryview(marker(2, 5, 0)))  # ABORT
    log.append_as_follower(memoryview(txn(3, 6, b"j", b"open")))  # still open: cleaning stops before it
    log.roll()
    log.append_as_follower(memoryview(marker(4, 6, 1)))
    log.update_high_watermark(4)  # the COMMIT is not replicated yet: the LSO stays at the transaction's start
    stats = LogCleaner().clean(log, now_ms())
    assert not stats.cleaned  # the last stable offset (3) is inside the only non-active segment
    log.update_high_watermark(5)
    log.roll()
    stats = LogCleaner().clean(log, now_ms())
    assert stats.cleaned and stats.aborted_removed == 1
    got = read_all(log)
    assert (0, b"k", b"committed") in got and all(v != b"aborted" for _o, _k, v in got)
    assert (3, b"j", b"open") in got
    control = [h for seg in log.segments for _p, h in batch_headers(seg.read_all()) if h.is_control]
    assert [h.base_offset for h in control] == [2, 4]
    log.close()


CRASH_SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from storage.cleaner import LogCleaner
    from storage.config import LogConfig
    from storage.log import Log
    from storage.segment import LogSegment

    root, when = Path(sys.argv[1]), sys.argv[2]
    log = Log.open(root / "orders-0", LogConfig(cleanup_policy="compact", segment_index_bytes=65536,
                                                  min_cleanable_dirty_ratio=0.0))
    original = LogSegment.change_file_suffixes
    def dying(self, old, new):
        if (when, new) in (("swap", ".swap"), ("deleted", ".deleted")) or (when, old) == ("final", ".swap"):
            original(self, old, new)
            os.kill(os.getpid(), signal.SIGKILL)
        original(self, old, new)
    LogSegment.change_file_suffixes = dying
    if when == "cleaned":
        orig_flush = LogSegment.flush
        def dying_flush(self):
            if self.file_suffix == ".cleaned":
                os.kill(os.getpid(), signal.SIGKILL)
            orig_flush(self)
        LogSegment.flush = dying_flush
    LogCleaner().clean(log, int(time.time() * 1000))
    print("cleaned without dying")
""")


def test_kill_9_during_swap_leaves_a_recoverable_log(tmp_path: Path) -> None:
    for when in ("cleaned", "swap", "deleted", "final"):
        root = tmp_path / when
        log = open_log(root)
        fill(log, 3, 4, codec=1)
        log.append_as_leader(kp_batch([(b"key-0", b"active")]), 0, now_ms=now_ms())
        before = read_all(log)
        log.close()
        proc = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(root), when], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == -9, (when, proc.stdout, proc.stderr)
        reopened = open_log(root)
        after = read_all(reopened)
        # Either the old or the cleaned data, never a mix that loses a key's latest value or its offset.
        assert latest_by_key(after) == latest_by_key(before), when
        assert reopened.log_end_offset == 13
        offsets = [o for o, _k, _v in after]
        assert offsets == sorted(set(offsets)) and set(offsets) <= {o for o, _k, _v in before}
        leftovers = [p.name for p in (root / "orders-0").iterdir() if p.name.endswith((".swap", ".cleaned"))]
        assert leftovers == [], when
        # And the cleaner can run again on the recovered log.
        assert LogCleaner().clean(reopened, now_ms()).cleaned
        assert latest_by_key(read_all(reopened)) == latest_by_key(before)
        reopened.close()


class _HoldingCleaner(LogCleaner):
    """Stops at its first abort check until an abort is requested, so the test hits a clean mid-way."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()

    def _check_abort(self, tp: TopicPartition) -> None:
        self.started.set()
        deadline = time.monotonic() + 10
        while tp not in self._aborting and time.monotonic() < deadline:
            time.sleep(0.001)
        super()._check_abort(tp)


def test_abort_and_pause_stops_a_running_clean_and_blocks_new_ones(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 3, 4)
    before = read_all(log)
    files_before = sorted(p.name for p in (tmp_path / "orders-0").iterdir())
    cleaner = _HoldingCleaner()
    tp = log.topic_partition
    result: list = []
    worker = threading.Thread(target=lambda: result.append(cleaner.clean(log, now_ms())))
    worker.start()
    assert cleaner.started.wait(10)
    assert cleaner.abort_and_pause(tp, timeout=10)
    worker.join(10)
    assert result[0].skipped == "aborted"
    assert read_all(log) == before
    assert sorted(p.name for p in (tmp_path / "orders-0").iterdir()) == files_before  # no .cleaned left
    assert cleaner.clean(log, now_ms()).skipped == "paused"
    assert cleaner.dirtiest_log([log]) is None
    cleaner.resume(tp)
    assert not cleaner.is_paused(tp)
    assert cleaner.dirtiest_log([log]) is log
    assert LogCleaner().clean(log, now_ms()).cleaned  # the aborted run left nothing that blocks a new one
    assert latest_by_key(read_all(log)) == latest_by_key(before)
    log.close()


def test_corrupt_batch_in_a_cleanable_segment_is_never_copied(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 2, 3)
    first = log.segments[0]
    raw = bytearray(first.read_all())
    os.pwrite(first.fd, bytes([raw[-2] ^ 0xFF]), len(raw) - 2)  # bit rot after recovery validated the file
    try:
        LogCleaner().clean(log, now_ms())
    except CleanerError as exc:
        assert "CRC mismatch" in str(exc)
    else:
        raise AssertionError("a corrupt batch was cleaned")
    assert not list((tmp_path / "orders-0").glob("*.cleaned*"))
    assert len(log.segments) == 3
    log.close()


def test_dirtiest_log_picks_the_highest_ratio(tmp_path: Path) -> None:
    a = Log.open(tmp_path / "a-0", COMPACT, now_ms=now_ms())
    b = Log.open(tmp_path / "b-0", COMPACT, now_ms=now_ms())
    d = Log.open(tmp_path / "d-0", LogConfig(), now_ms=now_ms())  # delete policy: never picked
    for log in (a, b, d):
        fill(log, 2, 3)
    cleaner = LogCleaner()
    assert cleaner.clean(a, now_ms()).cleaned
    fill(a, 1, 3, start_round=9)  # a: partly dirty; b: all dirty
    assert cleaner.dirtiest_log([a, b, d]) is b
    assert cleaner.clean(b, now_ms()).cleaned
    assert cleaner.dirtiest_log([a, b, d]) is a
    for log in (a, b, d):
        log.close()
