"""The .txnindex file: Kafka's 34-byte AbortedTxn entries, lazily created, truncated, renamed, checked."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from storage import CorruptIndexError
from storage.transaction_index import ABORTED_TXN_SIZE, AbortedTxn, TransactionIndex


def kafka_entry(producer_id: int, first: int, last: int, lso: int) -> bytes:
    """Kafka's AbortedTxn buffer, written field by field as its toByteBuffer does (putShort, 4 x putLong)."""
    return (struct.pack(">h", 0) + struct.pack(">q", producer_id) + struct.pack(">q", first)
            + struct.pack(">q", last) + struct.pack(">q", lso))


def test_entries_are_kafkas_34_bytes(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.txnindex"
    index = TransactionIndex(100, path)
    assert not path.exists()  # created on the first abort only
    index.append(AbortedTxn(7, 90, 105, 95))
    index.append(AbortedTxn(2**40, 101, 130, 131))
    index.flush()
    assert ABORTED_TXN_SIZE == 34
    assert path.read_bytes() == kafka_entry(7, 90, 105, 95) + kafka_entry(2**40, 101, 130, 131)
    index.close()
    reopened = TransactionIndex(100, path)
    assert reopened.all_aborted_txns() == [AbortedTxn(7, 90, 105, 95), AbortedTxn(2**40, 101, 130, 131)]
    reopened.sanity_check()


def test_last_offsets_must_increase(tmp_path: Path) -> None:
    index = TransactionIndex(0, tmp_path / "0.txnindex")
    index.append(AbortedTxn(1, 0, 10, 11))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 3, 10, 11))
    assert len(index) == 1


def test_collect_aborted_txns_overlap_and_completeness(tmp_path: Path) -> None:
    index = TransactionIndex(0, tmp_path / "0.txnindex")
    for txn in (AbortedTxn(1, 0, 5, 2), AbortedTxn(2, 2, 8, 6), AbortedTxn(3, 6, 12, 13)):
        index.append(txn)
    # [fetch, upper) overlaps a transaction when last >= fetch and first < upper
    assert index.collect_aborted_txns(6, 7).aborted_transactions == [AbortedTxn(2, 2, 8, 6), AbortedTxn(3, 6, 12, 13)]
    assert index.collect_aborted_txns(9, 12).aborted_transactions == [AbortedTxn(3, 6, 12, 13)]
    # complete once an entry's LSO reaches the upper bound: later aborts all started at or after it
    assert index.collect_aborted_txns(0, 6).is_complete
    assert not index.collect_aborted_txns(0, 20).is_complete


def test_truncate_reset_rename_delete(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(0, path)
    for txn in (AbortedTxn(1, 0, 5, 2), AbortedTxn(2, 2, 8, 6), AbortedTxn(3, 6, 12, 13)):
        index.append(txn)
    index.truncate_to(8)  # drops entries whose marker is at or after 8
    assert index.all_aborted_txns() == [AbortedTxn(1, 0, 5, 2)]
    assert path.stat().st_size == ABORTED_TXN_SIZE
    index.append(AbortedTxn(4, 7, 9, 10))  # appends continue after the cut
    assert TransactionIndex(0, path).all_aborted_txns() == [AbortedTxn(1, 0, 5, 2), AbortedTxn(4, 7, 9, 10)]
    moved = tmp_path / "00000000000000000000.txnindex.deleted"
    index.rename_to(moved)
    assert moved.exists() and not path.exists() and index.path == moved
    index.reset()
    assert moved.stat().st_size == 0 and len(index) == 0
    index.delete()
    assert not moved.exists()
    # renaming an index that never got a file only moves its name
    lazy = TransactionIndex(0, tmp_path / "1.txnindex")
    lazy.rename_to(tmp_path / "1.txnindex.swap")
    assert not (tmp_path / "1.txnindex.swap").exists() and lazy.path.name == "1.txnindex.swap"


def test_torn_tail_ignored_and_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(kafka_entry(1, 0, 5, 2) + kafka_entry(2, 3, 9, 10)[:20])
    index = TransactionIndex(0, path)
    index.sanity_check()
    assert index.all_aborted_txns() == [AbortedTxn(1, 0, 5, 2)]
    index.append(AbortedTxn(3, 6, 12, 13))
    assert path.read_bytes() == kafka_entry(1, 0, 5, 2) + kafka_entry(3, 6, 12, 13)


@pytest.mark.parametrize("content", [
    kafka_entry(1, 0, 5, 2),  # marker before the segment's base offset 10
    kafka_entry(1, 10, 15, 16) + kafka_entry(2, 11, 12, 13),  # out of order
    b"\x00\x05" + kafka_entry(1, 10, 15, 16)[2:],  # unknown version
])
def test_sanity_check_rejects(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "00000000000000000010.txnindex"
    path.write_bytes(content)
    with pytest.raises(CorruptIndexError):
        TransactionIndex(10, path).sanity_check()
