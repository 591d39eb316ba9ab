"""Transactions in a Log on disk: the LSO against the HW and markers, the aborted-transaction index across
segments, reads for read_committed, follower appends, truncation, and recovery after a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from records import batch_headers
from storage import AbortedTxn, AppendOrigin, InvalidRecordError, Log, LogConfig

from .txn_support import idempotent_batch, marker, txn_batch, txn_state

SMALL = LogConfig(segment_bytes=160, index_interval_bytes=1, segment_index_bytes=4096)


def open_log(path: Path, config: LogConfig = SMALL, **kw) -> Log:
    return Log.open(path / "orders-0", config, **kw)


def client(lg: Log, batch: bytearray) -> int:
    return lg.append_as_leader(batch, 0, now_ms=1).first_offset


def coordinator(lg: Log, batch: bytearray) -> int:
    return lg.append_as_leader(batch, 0, now_ms=1, origin=AppendOrigin.COORDINATOR).first_offset


def test_lso_follows_the_high_watermark_and_markers(tmp_path: Path) -> None:
    lg = open_log(tmp_path, LogConfig())
    lg.update_high_watermark(0)
    client(lg, idempotent_batch(9, 0))  # 0: not transactional: never unstable
    assert client(lg, txn_batch(1, 0, 2)) == 1  # 1-2: producer 1 opens a transaction
    assert lg.first_unstable_offset == 1 and lg.last_stable_offset == 0  # the HW (0) is lower
    lg.update_high_watermark(3)
    assert lg.last_stable_offset == 1
    assert client(lg, txn_batch(2, 0)) == 3  # 3: producer 2
    assert coordinator(lg, marker(1, commit=True)) == 4
    assert lg.first_unstable_offset == 1  # committed, but the marker is not below the HW yet
    lg.update_high_watermark(4)
    assert lg.last_stable_offset == 1
    lg.update_high_watermark(5)
    assert (lg.first_unstable_offset, lg.last_stable_offset) == (3, 3)
    assert coordinator(lg, marker(2, commit=False)) == 5
    assert lg.active_segment.txn_index.all_aborted_txns() == [AbortedTxn(2, 3, 5, 6)]
    lg.update_high_watermark(6)
    assert lg.first_unstable_offset is None and lg.last_stable_offset == 6
    lg.close()


def test_only_the_coordinator_writes_markers(tmp_path: Path) -> None:
    lg = open_log(tmp_path, LogConfig())
    client(lg, txn_batch(1, 0))
    with pytest.raises(InvalidRecordError) as e:
        client(lg, marker(1, commit=True))
    assert e.value.kafka_error == "INVALID_RECORD" and lg.log_end_offset == 1
    coordinator(lg, marker(1, commit=True))
    assert lg.first_unstable_offset is None  # no partition reports an HW: completed counts as replicated
    lg.close()


def build_history(lg: Log) -> None:
    """Transactions over many small segments: producer 1 aborts one that spans segments and commits one,
    producer 2 aborts interleaved with it, producer 3 is idempotent only, producer 4 leaves one open."""
    lg.update_high_watermark(0)
    client(lg, txn_batch(1, 0, 3))  # 0-2
    client(lg, idempotent_batch(3, 0, 2))  # 3-4
    client(lg, txn_batch(2, 0))  # 5
    client(lg, txn_batch(1, 3, 2))  # 6-7
    coordinator(lg, marker(2, commit=False, coordinator_epoch=1))  # 8: abort [5, 8]
    client(lg, txn_batch(1, 5))  # 9
    coordinator(lg, marker(1, commit=False, coordinator_epoch=2))  # 10: abort [0, 10]
    client(lg, txn_batch(1, 6, 2, epoch=0))  # 11-12
    client(lg, idempotent_batch(3, 2))  # 13
    coordinator(lg, marker(1, commit=True, coordinator_epoch=2))  # 14
    client(lg, txn_batch(4, 0, 2))  # 15-16: left open
    client(lg, idempotent_batch(3, 3))  # 17
    lg.update_high_watermark(lg.log_end_offset)


def test_aborted_transactions_across_segments_and_read_committed_reads(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    build_history(lg)
    assert len(lg.segments) > 5
    state = txn_state(lg)
    a2, a1 = AbortedTxn(2, 5, 8, 0), AbortedTxn(1, 0, 10, 11)
    assert [t for txns in state["aborted"].values() for t in txns] == [a2, a1]  # LSO 0: producer 1 still open
    assert state["ongoing"] == [(15, 4)] and lg.last_stable_offset == 15
    assert lg.collect_aborted_transactions(0, 1) == [a1]  # indexed with its marker, four segments later
    assert lg.collect_aborted_transactions(0, 6) == [a2, a1]
    assert lg.collect_aborted_transactions(9, 11) == [a1]
    assert lg.collect_aborted_transactions(11, 18) == []
    # a read_committed read up to the LSO lists the aborted transactions of what it returned
    info = lg.read(6, 1 << 20, max_offset=lg.last_stable_offset, include_aborted_transactions=True)
    assert info.records is not None and info.aborted_transactions == [a2, a1]
    info = lg.read(15, 1 << 20, max_offset=lg.last_stable_offset, include_aborted_transactions=True)
    assert info.records is None and info.aborted_transactions == []
    assert lg.read(6, 1 << 20, max_offset=15).aborted_transactions is None  # read_uncommitted: none asked
    lg.close()


def test_a_follower_builds_the_same_indexes_and_state(tmp_path: Path) -> None:
    leader = open_log(tmp_path / "leader")
    build_history(leader)
    follower = open_log(tmp_path / "follower")
    follower.update_high_watermark(0)
    for seg in leader.segments:  # replicate segment by segment, like fetches
        follower.append_as_follower(memoryview(seg.read_all()))
    follower.update_high_watermark(follower.log_end_offset)
    assert txn_state(follower) == txn_state(leader)
    for a, b in zip(leader.segments, follower.segments, strict=True):
        assert a.base_offset == b.base_offset
        assert (a.txn_index.path.read_bytes() if a.txn_index.path.exists() else b"") == \
            (b.txn_index.path.read_bytes() if b.txn_index.path.exists() else b"")
    leader.close()
    follower.close()


def test_truncation_reopens_transactions_and_cuts_the_index(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    build_history(lg)
    lg.truncate_to(10)  # producer 1's abort marker goes
    state = txn_state(lg)
    assert [t for txns in state["aborted"].values() for t in txns] == [AbortedTxn(2, 5, 8, 0)]
    assert state["ongoing"] == [(0, 1)] and state["producers"][1][4] == 0
    lg.update_high_watermark(10)
    assert lg.last_stable_offset == 0
    lg.truncate_to(8)  # and producer 2's
    assert txn_state(lg)["aborted"] == {} and txn_state(lg)["ongoing"] == [(0, 1), (5, 2)]
    lg.truncate_fully_and_start_at(30)
    assert txn_state(lg)["ongoing"] == [] and lg.first_unstable_offset is None
    lg.close()


def test_log_start_offset_bounds_the_first_unstable_offset(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    build_history(lg)
    lg.update_high_watermark(lg.log_end_offset)
    lg.maybe_increment_log_start_offset(16)
    assert lg.first_unstable_offset == 16  # producer 4's transaction began below the log start
    lg.close()


def test_clean_restart_keeps_open_transactions(tmp_path: Path) -> None:
    lg = open_log(tmp_path)
    build_history(lg)
    before = txn_state(lg)
    lg.close()
    lg = open_log(tmp_path, had_clean_shutdown=True)
    lg.update_high_watermark(lg.log_end_offset)
    assert txn_state(lg) == before
    coordinator(lg, marker(4, commit=False))  # the open transaction completes after the restart
    assert lg.active_segment.txn_index.all_aborted_txns()[-1] == AbortedTxn(4, 15, 18, 19)
    lg.close()


def _damage(dir: Path, kind: str) -> None:
    if kind == "missing txnindex":
        for p in dir.glob("*.txnindex"):
            p.unlink()
    elif kind == "missing snapshots":
        for p in dir.glob("*.snapshot"):
            p.unlink()
    elif kind == "torn tail":
        last = sorted(dir.glob("*.log"))[-1]
        data = last.read_bytes()
        pos, h = batch_headers(data)[-1]
        os.truncate(last, pos + h.size // 2)  # the batch appended after the state was taken, half written


@pytest.mark.parametrize("kind", ["crash", "torn tail", "missing txnindex", "missing snapshots"])
def test_recovery_rebuilds_the_same_transaction_state(tmp_path: Path, kind: str) -> None:
    lg = open_log(tmp_path)
    build_history(lg)
    before = txn_state(lg)
    if kind == "torn tail":
        client(lg, txn_batch(4, 2))  # the batch the crash tears
    lg.close_handles()  # a crash: no flush, no final snapshot
    _damage(lg.dir, kind)
    lg = open_log(tmp_path, recovery_point=0, had_clean_shutdown=False)
    lg.update_high_watermark(lg.log_end_offset)
    assert txn_state(lg) == before
    lg.close()


def test_recovery_from_the_recovery_point_uses_earlier_segments(tmp_path: Path) -> None:
    """Only segments from the recovery point on are recovered; their indexes are rebuilt from the producer
    state of the earlier segments (a snapshot plus replay), so aborts of transactions begun earlier are
    indexed again."""
    lg = open_log(tmp_path)
    build_history(lg)
    before = txn_state(lg)
    recovery_point = next(s.base_offset for s in lg.segments if s.base_offset >= 8)  # inside producer 1's txn
    lg.flush(recovery_point)
    lg.close_handles()
    for seg in lg.segments:
        if seg.base_offset >= recovery_point:
            seg.txn_index.path.unlink(missing_ok=True)
    lg = open_log(tmp_path, recovery_point=recovery_point, had_clean_shutdown=False)
    lg.update_high_watermark(lg.log_end_offset)
    assert txn_state(lg) == before
    lg.close()
