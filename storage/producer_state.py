"""Producer state of one partition (Kafka's ProducerStateManager): idempotence and transactions.

Contract:
- ``producers``: producer id -> ``ProducerStateEntry`` (epoch, its last 5 batches, coordinator epoch, first
  offset of its open transaction). Every append goes through a ``ProducerAppendInfo``
  (``prepare_update(producer_id, origin)``), which checks the batches against the entry with Kafka's rules
  (epochs, sequences, transactional state, coordinator epochs of end markers) and collects the transactions
  they start and the ``CompletedTxn`` an end marker closes; ``update(info)`` applies it only once the bytes
  are written. ``storage.producer_append`` walks an append's batches through it.
- Transactions: ``ongoing_txns`` (first offset -> ``TxnMetadata``) holds the open ones; ``complete_txn`` moves
  one to ``unreplicated_txns`` until the high watermark passes its marker (``on_high_watermark_updated``).
  ``first_unstable_offset()`` is the smallest first offset of both, None when there is none: the log's last
  stable offset (LSO) is that offset when it is below the high watermark, else the high watermark.
  ``last_stable_offset(completed)`` is the LSO an aborted transaction's index entry records: the first
  offset of the next open transaction of another producer, else just after the marker.
- KIP-890 verification (``maybe_create_verification_state_entry``, ``verification_state_entry``): a
  ``VerificationGuard`` per producer id between the coordinator's answer and the first transactional append.
- Expiration (Kafka's removeExpiredProducers, producer.id.expiration.ms in the shared, mutable
  ``ProducerStateManagerConfig``): ``remove_expired_producers(now_ms)`` forgets every producer without an
  open transaction whose last timestamp (the max timestamp of its last batch or marker) is at least that
  old, and every verification entry as old; loading a snapshot with ``now_ms`` skips such producers too.
  An expired producer that writes again starts afresh: its next batch is taken with any sequence, as Kafka
  3.7 does for a producer it has no state for. Whoever owns the clock calls it (the broker, periodically).
- Snapshots ``<offset:020d>.snapshot`` in Kafka's format (version 1: ``version int16 | crc uint32 | entries
  array``, each ``producer_id int64, producer_epoch int16, last_sequence int32, last_offset int64,
  offset_delta int32, timestamp int64, coordinator_epoch int32, current_txn_first_offset int64``; CRC32C over
  the entries) are taken at segment rolls and clean shutdown. Loading one restores the open transactions
  from ``current_txn_first_offset``; completed-but-unreplicated ones are found again by replaying the log
  after the snapshot (``storage.log_loader.rebuild_producer_state``).
"""

from __future__ import annotations

import itertools
import logging
import os
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

# The extension module itself: `python -m broker` stands in for the crc32c package (broker/lazy_packages.py), whose
# __init__ looks its own version up in the installed distributions (importlib.metadata: 30-200 ms at start-up).
from crc32c._crc32c import crc32c

from records.header import NO_PRODUCER_EPOCH, NO_SEQUENCE
from storage.checkpoints import fsync_dir
from storage.errors import (
    CorruptLogError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from storage.log_validator import AppendOrigin

log = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAP_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")
_MAX_SNAPSHOT_ENTRIES = 10_000_000
INT32_MAX = 2**31 - 1
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # Kafka's producer.id.expiration.ms default (one day)


@dataclass
class ProducerStateManagerConfig:
    """Settings every partition's producer state reads at use (Kafka's ProducerStateManagerConfig). One
    object is shared by all the logs of a ``LogManager``; changing it reaches every log at once."""

    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS


def decrement_sequence(sequence: int, decrement: int) -> int:
    """Kafka's DefaultRecordBatch.decrementSequence: sequences wrap below 0 to Integer.MAX_VALUE."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1  # -1: no open transaction
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.current_txn_first_offset,
            self.last_timestamp,
        )

    def find_duplicate(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if producer_epoch != self.producer_epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None

    def maybe_update_producer_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, first_seq: int, last_seq: int, first_offset: int, last_offset: int,
                  timestamp: int) -> None:
        self.maybe_update_producer_epoch(epoch)
        self.batches.append(BatchMetadata(first_seq, last_seq, first_offset, last_offset, timestamp))
        self.last_timestamp = timestamp


class TxnMetadata:
    """An open (``last_offset`` None) or completed transaction of one producer on this partition."""

    __slots__ = ("first_offset", "last_offset", "producer_id")

    def __init__(self, producer_id: int, first_offset: int, last_offset: int | None = None) -> None:
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset = last_offset

    def __repr__(self) -> str:
        return f"TxnMetadata(producer_id={self.producer_id}, first_offset={self.first_offset}, " \
               f"last_offset={self.last_offset})"


class CompletedTxn(NamedTuple):
    """A transaction an end marker closed: ``last_offset`` is the marker's offset (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class VerificationGuard:
    """KIP-890: proof that the coordinator confirmed a producer's transaction includes this partition
    (Kafka's VerificationGuard). ``SENTINEL`` stands for "none" and verifies nothing."""

    __slots__ = ("value",)
    _ids = itertools.count(1)
    SENTINEL: VerificationGuard

    def __init__(self, value: int | None = None) -> None:
        self.value = next(self._ids) if value is None else value

    def verify(self, other: VerificationGuard | None) -> bool:
        return other is not None and other is not VerificationGuard.SENTINEL and other.value == self.value

    def __repr__(self) -> str:
        return f"VerificationGuard({self.value})"


VerificationGuard.SENTINEL = VerificationGuard(0)


@dataclass
class VerificationStateEntry:
    """A producer's verification in flight: its guard and the lowest sequence seen meanwhile (Kafka's)."""

    timestamp: int
    lowest_sequence: int
    epoch: int
    verification_guard: VerificationGuard = field(default_factory=VerificationGuard)
    # transaction.version 2 (the leader adds the partition): a producer without state here starts at sequence 0.
    supports_epoch_bump: bool = False

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerAppendInfo:
    """One producer's batches in one append, checked against its entry (Kafka's ProducerAppendInfo).

    ``updated`` starts as a copy of the current entry and takes each batch; ``started_transactions`` are
    the transactions this append opens. Clients get every check; the coordinator (group and transaction
    markers) the epoch checks only; replication and recovery none that fail (an older epoch or coordinator
    epoch is logged: the leader decided). Raises the typed errors of ``storage.errors``.
    """

    __slots__ = ("current", "origin", "producer_id", "started_transactions", "topic_partition", "updated",
                 "verification")

    def __init__(self, producer_id: int, current: ProducerStateEntry | None, origin: AppendOrigin,
                 verification: VerificationStateEntry | None, topic_partition: object) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.verification = verification
        self.topic_partition = topic_partition
        self.updated = current.copy() if current is not None else ProducerStateEntry(producer_id)
        self.started_transactions: list[TxnMetadata] | tuple[()] = ()  # a list once one starts

    def _check_producer_epoch(self, epoch: int, offset: int) -> None:
        if epoch < self.updated.producer_epoch:
            message = (f"epoch of producer {self.producer_id} at offset {offset} in {self.topic_partition} is "
                       f"{epoch}, which is smaller than the last seen epoch {self.updated.producer_epoch}")
            if self.origin is AppendOrigin.REPLICATION:
                log.warning("%s", message)
            else:
                raise InvalidProducerEpochError(message)

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        verification = self.verification
        if verification is not None and verification.supports_epoch_bump and first_seq != 0 \
                and (self.current is None or not self.current.batches):
            # Kafka 4.1 (KAFKA-18202): a TV2 producer unknown here cannot be in the middle of a sequence.
            raise OutOfOrderSequenceError(
                f"invalid sequence number for producer {self.producer_id} at offset {offset} in "
                f"{self.topic_partition}: {first_seq} (incoming seq. number); a transactions v2 producer with no "
                f"state here must start at sequence 0")
        if verification is not None and first_seq > verification.lowest_sequence:
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {self.producer_id} at offset {offset} in "
                f"{self.topic_partition}: {first_seq} (incoming seq. number), {verification.lowest_sequence} "
                f"(earliest seen sequence)")
        entry = self.updated
        if epoch != entry.producer_epoch:
            if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"{self.topic_partition}: {epoch} (request epoch), {first_seq} (seq. number), "
                    f"{entry.producer_epoch} (current producer epoch)")
        elif not (self.current is None or self.current.producer_epoch == NO_PRODUCER_EPOCH
                  or _in_sequence(entry.last_seq, first_seq)):
            # with no batch left (say an epoch set by a marker) the producer must start again at 0
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {self.producer_id} at offset {offset} in "
                f"{self.topic_partition}: {first_seq} (incoming seq. number), {entry.last_seq} (current end "
                f"sequence number)")

    def append_data_batch(self, epoch: int, first_seq: int, last_seq: int, last_timestamp: int,
                          first_offset: int, last_offset: int, is_transactional: bool) -> None:
        entry = self.updated
        if epoch < entry.producer_epoch:
            self._check_producer_epoch(epoch, first_offset)
        if self.origin is AppendOrigin.CLIENT:
            batches = entry.batches
            # the common case, the next batch of the same epoch, needs no more than this
            if self.verification is not None or epoch != entry.producer_epoch or not batches \
                    or batches[-1].last_seq + 1 != first_seq:
                self._check_sequence(epoch, first_seq, first_offset)
        if epoch != entry.producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = epoch
        entry.batches.append(BatchMetadata(first_seq, last_seq, first_offset, last_offset, last_timestamp))
        entry.last_timestamp = last_timestamp
        if entry.current_txn_first_offset >= 0:
            if not is_transactional:
                if self.origin is AppendOrigin.REPLICATION:
                    # A leader never writes this; a log that has it is served as it is rather than refused.
                    log.warning("non-transactional batch of producer %d at offset %d in %s while its "
                                "transaction is open", self.producer_id, first_offset, self.topic_partition)
                else:
                    raise InvalidTxnStateError(
                        f"expected transactional write from producer {self.producer_id} at offset {first_offset} "
                        f"in partition {self.topic_partition}")
        elif is_transactional:
            entry.current_txn_first_offset = first_offset
            self.started_transactions = [*self.started_transactions, TxnMetadata(self.producer_id, first_offset)]

    def append_end_txn_marker(self, is_commit: bool, coordinator_epoch: int, producer_epoch: int, offset: int,
                              timestamp: int) -> CompletedTxn | None:
        """An end marker at ``offset``: the transaction it completes (None when the producer had none open:
        such a marker changes neither the LSO nor the transaction index)."""
        self._check_producer_epoch(producer_epoch, offset)
        entry = self.updated
        if entry.coordinator_epoch > coordinator_epoch:
            message = (f"invalid coordinator epoch for producerId {self.producer_id} at offset {offset} in "
                       f"partition {self.topic_partition}: {coordinator_epoch} (zombie), "
                       f"{entry.coordinator_epoch} (current)")
            if self.origin is AppendOrigin.REPLICATION:
                log.info("%s", message)
            else:
                raise TransactionCoordinatorFencedError(message)
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(self.producer_id, entry.current_txn_first_offset, offset, not is_commit)
        entry.maybe_update_producer_epoch(producer_epoch)
        entry.coordinator_epoch = coordinator_epoch
        entry.current_txn_first_offset = -1
        entry.last_timestamp = timestamp
        return completed


class ProducerStateManager:
    def __init__(self, dir: Path, topic_partition: object = None,
                 config: ProducerStateManagerConfig | None = None) -> None:
        # The caller's Path when it is one: its log's, shared (Path(path) copies, ~450 bytes per partition each).
        self.dir = dir if isinstance(dir, Path) else Path(dir)
        self.topic_partition = topic_partition if topic_partition is not None else self.dir.name
        self.config = config if config is not None else ProducerStateManagerConfig()
        self.producers: dict[int, ProducerStateEntry] = {}
        # first offset -> transaction; usually a handful, so order is found by sorting when asked
        self.ongoing_txns: dict[int, TxnMetadata] = {}
        self.unreplicated_txns: dict[int, TxnMetadata] = {}
        self.verification_states: dict[int, VerificationStateEntry] = {}
        # KIP-890 checks on leader appends (Kafka's transaction.partition.verification.enable); the broker
        # turns it on once it verifies transactional produces with the coordinator.
        self.transaction_verification_enabled = False
        self.map_end_offset = 0

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    @property
    def has_transactions(self) -> bool:
        """Whether any transaction is open or completed above the high watermark (the LSO may differ from
        the HW); the cheap check that keeps non-transactional appends free of transaction work."""
        return bool(self.ongoing_txns or self.unreplicated_txns)

    def is_empty(self) -> bool:
        return not self.producers and not self.unreplicated_txns

    def has_ongoing_txn(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        """Whether the producer has a transaction open here; with `producer_epoch`, one opened at that epoch
        (Kafka 4.x: a newer epoch's transaction may have ended, its marker not yet here, KIP-890 part 2)."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0 \
            and (producer_epoch is None or entry.producer_epoch == producer_epoch)

    # -- appends -------------------------------------------------------------------------------------
    def prepare_update(self, producer_id: int, origin: AppendOrigin) -> ProducerAppendInfo:
        verification = self.verification_states.get(producer_id) if self.verification_states else None
        return ProducerAppendInfo(producer_id, self.producers.get(producer_id), origin, verification,
                                  self.topic_partition)

    def update(self, info: ProducerAppendInfo) -> None:
        """Apply what one append did for one producer (after the bytes are written)."""
        self.producers[info.producer_id] = info.updated
        if info.started_transactions:
            for txn in info.started_transactions:
                self.ongoing_txns[txn.first_offset] = txn

    # -- transactions --------------------------------------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest transaction that is open or whose marker is above the HW."""
        best = None
        for txns in (self.ongoing_txns, self.unreplicated_txns):
            if txns:
                first = min(txns)
                if best is None or first < best:
                    best = first
        return best

    def first_undecided_offset(self) -> int | None:
        """The first offset of the earliest open transaction (replication state aside)."""
        return min(self.ongoing_txns) if self.ongoing_txns else None

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` is done (its transaction-index entry): the first offset of the earliest
        open transaction of another producer, else just after the marker."""
        for first in sorted(self.ongoing_txns):
            if self.ongoing_txns[first].producer_id != completed.producer_id:
                return first
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.pop(completed.first_offset, None)
        if txn is None:
            raise ValueError(f"completing transaction {completed} that was not started")
        txn.last_offset = completed.last_offset
        self.unreplicated_txns[completed.first_offset] = txn

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is below the HW no longer hold the LSO back."""
        if self.unreplicated_txns:
            self._remove_unreplicated_txns(high_watermark)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated_txns(log_start_offset)
        self.map_end_offset = max(self.map_end_offset, log_start_offset)

    def _remove_unreplicated_txns(self, offset: int) -> None:
        done = [first for first, txn in self.unreplicated_txns.items()
                if txn.last_offset is not None and txn.last_offset < offset]
        for first in done:
            del self.unreplicated_txns[first]

    def last_records_of_active_producers(self) -> dict[int, tuple[int, int]]:
        """producer id -> (last data offset or -1, producer epoch), Kafka's lastRecordsOfActiveProducers: the
        cleaner keeps the batch (or marker) that carries each producer's state. Safe from another thread."""
        return {e.producer_id: (e.last_data_offset, e.producer_epoch) for e in list(self.producers.values())}

    # -- expiration ----------------------------------------------------------------------------------
    def is_producer_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        """No open transaction, and idle for producer.id.expiration.ms (Kafka's isProducerExpired)."""
        return entry.current_txn_first_offset < 0 and \
            now_ms - entry.last_timestamp >= self.config.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        """Forget the expired producers and the verification entries as old; returns the producer ids removed."""
        expired = [pid for pid, entry in self.producers.items() if self.is_producer_expired(now_ms, entry)]
        for pid in expired:
            del self.producers[pid]
        expiration_ms = self.config.producer_id_expiration_ms
        stale = [pid for pid, v in self.verification_states.items() if now_ms - v.timestamp >= expiration_ms]
        for pid in stale:
            del self.verification_states[pid]
        return expired

    # -- KIP-890 verification ------------------------------------------------------------------------
    def maybe_create_verification_state_entry(self, producer_id: int, sequence: int, epoch: int,
                                              now_ms: int, supports_epoch_bump: bool = False
                                              ) -> VerificationStateEntry:
        entry = self.verification_states.get(producer_id)
        if entry is None:
            entry = self.verification_states[producer_id] = VerificationStateEntry(
                now_ms, sequence, epoch, supports_epoch_bump=supports_epoch_bump)
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry

    def verification_state_entry(self, producer_id: int) -> VerificationStateEntry | None:
        return self.verification_states.get(producer_id)

    def clear_verification_state_entry(self, producer_id: int) -> None:
        self.verification_states.pop(producer_id, None)

    # -- snapshots -----------------------------------------------------------------------------------
    def snapshot_path(self, offset: int) -> Path:
        return self.dir / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        out = []
        for p in self.dir.glob(f"*{SNAPSHOT_SUFFIX}"):
            stem = p.name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                out.append(int(stem))
        return sorted(out)

    def take_snapshot(self, offset: int | None = None, *, sync: bool = True) -> Path:
        """Write ``<offset>.snapshot`` (tmp + rename). ``sync=False`` skips the fsyncs so a roll on the event
        loop never waits for the disk; the log fsyncs the file and directory on its next flush (a snapshot
        lost in a crash is harmless: the state is rebuilt from an older snapshot and the log)."""
        offset = self.map_end_offset if offset is None else offset
        path = self.snapshot_path(offset)
        write_snapshot(path, self.producers.values(), sync=sync)
        if sync:
            fsync_dir(self.dir)
        return path

    def load_latest_snapshot(self, max_offset: int, now_ms: int | None = None) -> int | None:
        """Reset state to the newest readable snapshot <= ``max_offset``; returns its offset (None: empty).
        With ``now_ms``, producers already expired then are not loaded (Kafka's loadFromSnapshot)."""
        self.producers = {}
        self.ongoing_txns = {}
        self.unreplicated_txns = {}
        self.map_end_offset = 0
        for offset in reversed(self.snapshot_offsets()):
            if offset > max_offset:
                continue
            try:
                entries = read_snapshot(self.snapshot_path(offset))
            except (OSError, CorruptLogError) as e:
                log.warning("deleting unreadable producer snapshot %s: %s", self.snapshot_path(offset), e)
                self.snapshot_path(offset).unlink(missing_ok=True)
                continue
            for entry in entries:
                if now_ms is None or not self.is_producer_expired(now_ms, entry):
                    self.load_producer_entry(entry)
            self.map_end_offset = offset
            return offset
        return None

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        """Take an entry as stored; its open transaction (``current_txn_first_offset``) is open again."""
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset >= 0:
            self.ongoing_txns[entry.current_txn_first_offset] = TxnMetadata(
                entry.producer_id, entry.current_txn_first_offset)

    def delete_snapshots_after(self, offset: int) -> None:
        for o in self.snapshot_offsets():
            if o > offset:
                self.snapshot_path(o).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        """Remove snapshots below ``offset`` but keep the newest of them, replay may start there."""
        older = [o for o in self.snapshot_offsets() if o < offset]
        for o in older[:-1]:
            self.snapshot_path(o).unlink(missing_ok=True)

    def truncate_fully(self, offset: int) -> None:
        self.producers = {}
        self.ongoing_txns = {}
        self.unreplicated_txns = {}
        self.map_end_offset = offset
        for o in self.snapshot_offsets():
            self.snapshot_path(o).unlink(missing_ok=True)


def write_snapshot(path: Path, entries, *, sync: bool) -> None:  # noqa: ANN001 (an iterable of entries)
    body = bytearray()
    count = 0
    for e in list(entries):
        last = e.batches[-1] if e.batches else None
        body += _SNAP_ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            last.last_seq if last else NO_SEQUENCE,
            last.last_offset if last else -1,
            (last.last_offset - last.first_offset) if last else 0,
            e.last_timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        count += 1
    entries_bytes = struct.pack(">i", count) + body
    data = struct.pack(">hI", SNAPSHOT_VERSION, crc32c(entries_bytes)) + entries_bytes
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    """The entries of a snapshot file (Kafka's readSnapshot); ``CorruptLogError`` when it is not one."""
    data = path.read_bytes()
    if len(data) < _SNAP_HEADER.size:
        raise CorruptLogError(f"snapshot {path.name} too short")
    version, crc, count = _SNAP_HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptLogError(f"snapshot {path.name}: unsupported version {version}")
    if crc32c(memoryview(data)[6:]) != crc:
        raise CorruptLogError(f"snapshot {path.name}: CRC mismatch")
    if not 0 <= count <= _MAX_SNAPSHOT_ENTRIES or len(data) != _SNAP_HEADER.size + count * _SNAP_ENTRY.size:
        raise CorruptLogError(f"snapshot {path.name}: bad entry count {count}")
    out = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord, txn_first = _SNAP_ENTRY.unpack_from(
            data, _SNAP_HEADER.size + i * _SNAP_ENTRY.size
        )
        e = ProducerStateEntry(pid, epoch, coordinator_epoch=coord,
                               current_txn_first_offset=txn_first if txn_first >= 0 else -1, last_timestamp=ts)
        if last_offset >= 0:
            e.batches.append(BatchMetadata(decrement_sequence(last_seq, delta) if last_seq >= 0 else last_seq,
                                           last_seq, last_offset - delta, last_offset, ts))
        out.append(e)
    return out
