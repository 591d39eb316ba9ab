"""The cleaner's transactional rules on real logs (Kafka's LogCleanerTest cases): aborted data goes at once,
markers stay while their transaction has data, then get a delete horizon and go after it, the batch that
carries a producer's state stays as an empty batch, and nothing at or past the last stable offset is cleaned."""

from __future__ import annotations

from pathlib import Path

from kafka.record.memory_records import MemoryRecordsBuilder

from records import RecordBatch, batch_headers, parse_header
from storage import AbortedTxn, AppendOrigin, Log, LogConfig
from storage.cleaner import LogCleaner

from .txn_support import T0, marker

DAY_MS = 86_400_000
CONFIG = LogConfig(cleanup_policy="compact", segment_bytes=256, segment_index_bytes=4096, index_interval_bytes=1,
                   min_cleanable_dirty_ratio=0.0, delete_retention_ms=DAY_MS)
NOW = T0 + 10_000


def open_log(root: Path) -> Log:
    lg = Log.open(root / "orders-0", CONFIG, now_ms=NOW)
    lg.update_high_watermark(0)
    return lg


def kv(keys: list[int], *, pid: int = -1, seq: int = -1, epoch: int = 0, transactional: bool = False) -> bytearray:
    b = MemoryRecordsBuilder(2, 0, batch_size=1 << 20, transactional=transactional, producer_id=pid,
                             producer_epoch=epoch if pid >= 0 else -1, base_sequence=seq)
    for i, k in enumerate(keys):
        b.append(T0 + i, str(k).encode(), str(k).encode())
    b.close()
    return bytearray(b.buffer())


class Producer:
    """A transactional producer appending as a client; its markers come as the coordinator's."""

    def __init__(self, lg: Log, pid: int, epoch: int = 0) -> None:
        self.lg, self.pid, self.epoch, self.seq = lg, pid, epoch, 0

    def send(self, keys: list[int]) -> None:
        self.lg.append_as_leader(kv(keys, pid=self.pid, seq=self.seq, epoch=self.epoch, transactional=True), 0,
                                 now_ms=NOW)
        self.seq += len(keys)

    def end(self, commit: bool, epoch: int | None = None) -> None:
        self.lg.append_as_leader(marker(self.pid, commit, epoch=self.epoch if epoch is None else epoch), 0,
                                 now_ms=NOW, origin=AppendOrigin.COORDINATOR)


def plain(lg: Log, keys: list[int]) -> None:
    lg.append_as_leader(kv(keys), 0, now_ms=NOW)


FILLER = 1000  # keys from here on are only there to make the log dirty again


def clean(lg: Log, at: int) -> None:
    """One cleaning after fresh dirty data (the cleaner rewrites the whole cleanable log each time)."""
    plain(lg, [FILLER + lg.log_end_offset])
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    stats = LogCleaner().clean(lg, at)
    assert stats.cleaned, stats.skipped


def _records(lg: Log) -> list:
    return [(h, r) for seg in lg.segments for pos, h in batch_headers(seg.read_all())
            for r in RecordBatch(seg.read_all()[pos:pos + h.size]).records()]


def keys_in_log(lg: Log) -> list[int]:
    return [k for h, r in _records(lg) if not h.is_control and (k := int(r.key)) < FILLER]


def offsets_in_log(lg: Log) -> list[int]:
    """Offsets of the records with a key and a value, markers included (Kafka's offsetsInLog), fillers left out."""
    return [r.offset for h, r in _records(lg) if h.is_control or int(r.key) < FILLER]


def batches(lg: Log) -> list:
    return [h for seg in lg.segments for _p, h in batch_headers(seg.read_all())]


def test_abort_marker_removal(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    p = Producer(lg, 1)
    p.send([1])  # 0
    p.send([2, 3])  # 1-2
    p.end(commit=False)  # 3
    p.send([3])  # 4
    p.end(commit=True)  # 5
    clean(lg, NOW)
    # Aborted records go at once; the abort marker stays, its data was there when this clean started.
    assert keys_in_log(lg) == [3] and offsets_in_log(lg) == [3, 4, 5]
    assert [t for s in lg.segments for t in s.txn_index.all_aborted_txns()] == [AbortedTxn(1, 0, 3, 4)]
    # The next clean finds no data of it: a delete horizon a day away...
    clean(lg, NOW + 1)
    stamped = next(h for h in batches(lg) if h.base_offset == 3)
    assert stamped.is_control and stamped.has_delete_horizon and stamped.base_timestamp == NOW + 1 + DAY_MS
    assert offsets_in_log(lg) == [3, 4, 5]
    clean(lg, NOW + DAY_MS)
    assert offsets_in_log(lg) == [3, 4, 5]
    # ...then it goes; the COMMIT stays, its data is still there.
    clean(lg, NOW + 1 + DAY_MS)
    assert offsets_in_log(lg) == [4, 5] and keys_in_log(lg) == [3]
    lg.close()


def test_commit_marker_removed_once_its_data_is_compacted_away(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    p = Producer(lg, 1)
    p.send([1])  # 0
    p.end(commit=True)  # 1
    p.send([2])  # 2: the producer's last data batch
    p.end(commit=True)  # 3
    plain(lg, [1])  # 4: supersedes offset 0
    clean(lg, NOW)
    assert offsets_in_log(lg) == [1, 2, 3, 4]  # record 0 gone, its COMMIT kept this time
    clean(lg, NOW)
    assert next(h for h in batches(lg) if h.base_offset == 1).has_delete_horizon
    clean(lg, NOW + DAY_MS)
    assert offsets_in_log(lg) == [2, 3, 4]
    lg.close()


def test_a_producers_last_marker_stays_as_an_empty_batch(tmp_path: Path) -> None:
    """A producer fenced by the coordinator (the abort carries a bumped epoch) has no data left once its
    aborted batch goes; its marker carries its epoch and stays, emptied (Kafka's RETAIN_EMPTY)."""
    lg = open_log(tmp_path)
    p = Producer(lg, 1)
    p.send([1])  # 0
    p.end(commit=False, epoch=1)  # 1
    plain(lg, [2])  # 2
    clean(lg, NOW)
    clean(lg, NOW)
    clean(lg, NOW + DAY_MS)
    kept = [h for h in batches(lg) if h.producer_id == 1]
    assert [(h.base_offset, h.is_control, h.records_count, h.producer_epoch) for h in kept] == [(1, True, 0, 1)]
    assert keys_in_log(lg) == [2]
    lg.close()


def test_aborted_data_of_a_producer_that_wrote_more_keeps_its_last_batch_empty(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    p = Producer(lg, 1)
    p.send([1, 2])  # 0-1, the producer's last data batch
    p.end(commit=False)  # 2
    plain(lg, [3])
    clean(lg, NOW)
    first = batches(lg)[0]
    assert (first.base_offset, first.last_offset, first.records_count, first.producer_id, first.base_sequence) == \
        (0, 1, 0, 1, 0)  # the sequence range survives for the producer's next batch
    assert keys_in_log(lg) == [3]
    lg.close()


def test_never_cleans_at_or_past_the_last_stable_offset(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    for i in range(6):
        plain(lg, [i % 2])  # duplicates of keys 0 and 1
    open_txn = Producer(lg, 7)
    open_txn.send([0])  # left open
    first_unstable = lg.log_end_offset - 1
    for i in range(6):
        plain(lg, [i % 2])
    lg.roll()
    lg.update_high_watermark(lg.log_end_offset)
    assert lg.last_stable_offset == first_unstable
    stats = LogCleaner().clean(lg, NOW)
    assert stats.cleaned and stats.end_offset <= first_unstable
    untouched = [h.base_offset for h in batches(lg) if h.base_offset >= first_unstable]
    assert untouched == list(range(first_unstable, lg.log_end_offset))  # every batch from the LSO on is there
    lg.close()


def test_never_cleans_at_or_past_the_high_watermark(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    for i in range(12):
        plain(lg, [i % 2])
    lg.roll()
    lg.update_high_watermark(6)  # what the followers have not got yet stays as it is
    stats = LogCleaner().clean(lg, NOW)
    assert stats.cleaned and stats.end_offset <= 6
    assert [h.base_offset for h in batches(lg) if h.base_offset >= 6] == list(range(6, 12))
    lg.close()


def test_cleaned_segments_keep_the_markers_they_need_after_a_restart(tmp_path: Path) -> None:
    """After cleaning and an unclean restart the aborted data is still invisible: what remains of an aborted
    transaction is indexed again by recovery."""
    lg = open_log(tmp_path)
    a, b = Producer(lg, 1), Producer(lg, 2)
    a.send([1])  # 0
    b.send([2])  # 1: b's last data batch, aborted
    a.send([3])  # 2
    b.end(commit=False)  # 3
    a.end(commit=True)  # 4
    clean(lg, NOW)
    lg.close_handles()
    lg = Log.open(tmp_path / "orders-0", CONFIG, recovery_point=0, had_clean_shutdown=False, now_ms=NOW)
    aborted = lg.collect_aborted_transactions(0, lg.log_end_offset)
    remaining_b = [h for h in batches(lg) if h.producer_id == 2 and not h.is_control]
    assert [(h.base_offset, h.records_count) for h in remaining_b] == [(1, 0)]  # emptied, kept for its state
    assert aborted == [AbortedTxn(2, 1, 3, 0)]  # a's transaction, open at 0 then, held the LSO
    assert parse_header(lg.segments[0].read_all()).producer_id == 1
    lg.close()
