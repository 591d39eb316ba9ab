"""Builders and views for transaction tests (not a test module).

- `txn_batch(pid, seq, n, epoch=0)`: a transactional producer's batch, built by kafka-python's stock encoder
  (offsets 0..n-1, as a producer sends it); `idempotent_batch` the same without the transactional flag.
- `marker(pid, commit, epoch=0, coordinator_epoch=0)`: a COMMIT/ABORT control batch as the coordinator writes it.
- `txn_state(log)`: what must survive a crash, as plain values: producers (epoch, last sequence, last offset,
  coordinator epoch, open transaction's first offset), open transactions, every aborted-transaction index
  entry by segment, the first unstable offset and the LSO.
"""

from __future__ import annotations

import time

from kafka.record.memory_records import MemoryRecordsBuilder

from records import ControlRecordType, build_control_batch
from storage import Log

# Recent, to the second: a producer whose batches are older than producer.id.expiration.ms (a day) is expired
# when a log is loaded (tests/storage/test_producer_expiration.py), which would change the state under test.
T0 = (time.time_ns() // 1_000_000_000 - 60) * 1000


def txn_batch(pid: int, seq: int, n: int = 1, *, epoch: int = 0, key: bytes = b"k", tag: str = "v",
              transactional: bool = True) -> bytearray:
    builder = MemoryRecordsBuilder(2, 0, batch_size=1 << 30, transactional=transactional, producer_id=pid,
                                   producer_epoch=epoch, base_sequence=seq)
    for i in range(n):
        builder.append(T0 + seq + i, key, f"{tag}-{pid}-{seq + i}".encode())
    builder.close()
    return bytearray(builder.buffer())


def idempotent_batch(pid: int, seq: int, n: int = 1, **kw) -> bytearray:
    return txn_batch(pid, seq, n, transactional=False, **kw)


def marker(pid: int, commit: bool, *, epoch: int = 0, coordinator_epoch: int = 0) -> bytearray:
    kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return bytearray(build_control_batch(kind, producer_id=pid, producer_epoch=epoch,
                                         coordinator_epoch=coordinator_epoch, timestamp=T0 + 999))


def txn_state(log: Log) -> dict:
    ps = log.producer_state
    return {
        "producers": {pid: (e.producer_epoch, e.last_seq, e.last_data_offset, e.coordinator_epoch,
                            e.current_txn_first_offset) for pid, e in sorted(ps.producers.items())},
        "ongoing": sorted((t.first_offset, t.producer_id) for t in ps.ongoing_txns.values()),
        "aborted": {seg.base_offset: seg.txn_index.all_aborted_txns() for seg in log.segments
                    if len(seg.txn_index)},
        "first_unstable": log.first_unstable_offset,
        "lso": log.last_stable_offset,
    }
