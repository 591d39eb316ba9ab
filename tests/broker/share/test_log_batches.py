"""Which log batches a share partition may hand out: control batches never; with read_committed, not an
aborted transaction's batches, from its first offset to its ABORT marker."""

from __future__ import annotations

from broker.share.log_batches import LogBatch, deliverable


def batch(first: int, last: int, pid: int = -1, *, txn: bool = False, marker: int = -1) -> LogBatch:
    return LogBatch(first, last, marker >= 0, txn, pid, b"", marker)


def test_read_uncommitted_skips_only_control_batches() -> None:
    batches = [batch(0, 1), batch(2, 3, 7, txn=True), batch(4, 4, 7, txn=True, marker=0)]
    assert deliverable(batches, None) == [True, True, False]


def test_read_committed_skips_aborted_transactions_up_to_their_marker() -> None:
    batches = [batch(0, 1, 7, txn=True), batch(2, 2, 8, txn=True), batch(3, 3, 7, txn=True, marker=0),
               batch(4, 4, 8, txn=True, marker=1), batch(5, 6, 7, txn=True), batch(7, 7), batch(8, 8, 7, txn=True)]
    # producer 7 aborted the transaction starting at 0 (marker at 3), and another starting at 8
    assert deliverable(batches, [(7, 0), (7, 8)]) == [False, True, False, False, True, True, False]
