"""One share partition (KIP-932, Kafka's SharePartition): the in-flight records of one share group on one
topic partition, kept by that partition's leader.

Contract:
- The window: `start_offset` (Kafka's SPSO: every record below it is acknowledged, archived or out of the
  log) and `end_offset` (one past the last offset fetched into the window, SPEO + 1). Each offset of the
  window has a state (RecordState: AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED) and a delivery count; an
  ACQUIRED offset also has its member and the deadline of its acquisition lock.
- `acquire(member, max_records)` hands out AVAILABLE offsets of the window first (redeliveries, lowest first),
  then new offsets `add_fetched` put in the window (whole batches: the limit may be exceeded to keep a batch
  whole, as Kafka). Each acquisition adds one to the delivery count and locks the offset for
  `record_lock_duration_ms`. At most `max_in_flight` offsets (`group.share.partition.max.record.locks`)
  are in the window: past that nothing new is fetched.
- `acknowledge(member, batches)`: every offset must be ACQUIRED by that member (else INVALID_RECORD_STATE and
  nothing changes); types 1 accept (ACKNOWLEDGED), 2 release (AVAILABLE), 3 reject (ARCHIVED), 0 gap
  (ARCHIVED: no record there). A malformed batch (first > last, a type count other than 1 or the batch
  length, an unknown type) is INVALID_REQUEST.
- A released or lock-expired offset goes back to AVAILABLE, or to ARCHIVED once its delivery count reached
  `delivery_count_limit` (the poison-record rule). `release_member` releases all of a member's offsets
  (its share session ended).
- The window's start moves past a prefix of ACKNOWLEDGED/ARCHIVED offsets. `persisted_state()` is what the
  persister gets after each change: the start offset and the batches of offsets whose state is not a plain
  never-delivered AVAILABLE (ACQUIRED is written as AVAILABLE: a lock does not outlive its leader).
- `restore(state)` rebuilds the window from a persisted state (acknowledged/archived offsets stay so,
  available ones keep their delivery counts).
Pure: no I/O, no clock of its own (times are passed in ms), so the rules are unit-tested directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.coordinator.share.persister import PersisterStateBatch, RecordState, SharePartitionState
from protocol.errors import ErrorCode

ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT, ACK_RENEW = 0, 1, 2, 3, 4


@dataclass(slots=True)
class InFlight:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str | None = None
    deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    first_offset: int
    last_offset: int
    delivery_count: int


class SharePartition:
    def __init__(self, start_offset: int, *, record_lock_duration_ms: int = 30000, delivery_count_limit: int = 5,
                 max_in_flight: int = 2000) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        # offset -> its state, for the offsets of the window only, in ascending offset order (add_fetched appends
        # past the end, the window's start pops from the front, restore sorts): the walks below iterate the
        # dict rather than look each offset of the range up.
        self.records: dict[int, InFlight] = {}
        self.batch_last: dict[int, int] = {}  # first offset of a fetched batch -> its last offset
        self.record_lock_duration_ms = record_lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        # Kept as the states change, so a fetch need not walk the window (up to max_in_flight offsets) to learn
        # them: how many offsets are AVAILABLE, and a lower bound of the ACQUIRED offsets' lock deadlines (None:
        # none is acquired). The bound may be below the true earliest deadline (that record was acknowledged
        # since); the walk it then triggers recomputes it.
        self._available = 0
        self._deadline_floor: int | None = None

    # ---------------------------------------------------------------- the window
    @property
    def can_fetch_more(self) -> bool:
        return self.end_offset - self.start_offset < self.max_in_flight

    def add_fetched(self, first_offset: int, last_offset: int, *, deliverable: bool = True) -> None:
        """Offsets read from the log join the window (those below its end are already in it). Offsets not
        `deliverable` (control records) are ARCHIVED at once; offsets skipped between batches (compaction)
        too."""
        if last_offset < self.end_offset:
            return
        for offset in range(self.end_offset, first_offset):
            self.records[offset] = InFlight(RecordState.ARCHIVED)
        first = max(first_offset, self.end_offset)
        for offset in range(first, last_offset + 1):
            self.records[offset] = InFlight(RecordState.AVAILABLE if deliverable else RecordState.ARCHIVED)
        if deliverable:
            self._available += last_offset + 1 - first
        self.batch_last[first] = last_offset
        self.end_offset = last_offset + 1

    def reset_start(self, offset: int) -> None:
        """The log no longer holds offsets below `offset` (retention, DeleteRecords): move the window there."""
        if offset <= self.start_offset:
            return
        for o in range(self.start_offset, min(offset, self.end_offset)):
            info = self.records.pop(o, None)
            if info is not None and info.state is RecordState.AVAILABLE:
                self._available -= 1
            self.batch_last.pop(o, None)
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)

    # ---------------------------------------------------------------- acquisition
    def acquire(self, member_id: str, max_records: int, now_ms: int, record_limit: bool = False
                ) -> list[AcquiredRange]:
        """Acquire up to `max_records` AVAILABLE offsets for `member_id`: redeliveries first, then offsets
        never delivered, a fetched batch at a time (so the limit may be exceeded to keep a batch whole), or
        with `record_limit` (Kafka 4.2's record-limit acquire mode) never more than `max_records`."""
        if self._available <= 0:
            return []  # nothing to hand out: the window is not walked (many members poll one partition)
        acquired: list[int] = []
        fresh: list[int] = []
        available = RecordState.AVAILABLE
        for offset, info in self.records.items():
            if info.state is available:
                (acquired if info.delivery_count > 0 else fresh).append(offset)
        del acquired[max_records:]
        i = 0
        while i < len(fresh) and len(acquired) < max_records:
            last = self.batch_last.get(fresh[i], fresh[i])
            while i < len(fresh) and fresh[i] <= last:
                acquired.append(fresh[i])
                i += 1
        if record_limit:
            del acquired[max_records:]
        deadline = now_ms + self.record_lock_duration_ms
        for offset in acquired:
            info = self.records[offset]
            info.state, info.member_id, info.deadline_ms = RecordState.ACQUIRED, member_id, deadline
            info.delivery_count += 1
        if acquired:
            self._available -= len(acquired)
            if self._deadline_floor is None or deadline < self._deadline_floor:
                self._deadline_floor = deadline
        return self._ranges(sorted(acquired))

    def available_count(self) -> int:
        return self._available

    def _ranges(self, offsets: list[int]) -> list[AcquiredRange]:
        out: list[AcquiredRange] = []
        for offset in offsets:
            count = self.records[offset].delivery_count
            if out and out[-1].last_offset + 1 == offset and out[-1].delivery_count == count:
                out[-1] = AcquiredRange(out[-1].first_offset, offset, count)
            else:
                out.append(AcquiredRange(offset, offset, count))
        return out

    def has_available(self) -> bool:
        return self._available > 0

    # ---------------------------------------------------------------- acknowledgement and release
    def acknowledge(self, member_id: str, batches: list[tuple[int, int, list[int]]],
                    renew_at_ms: int | None = None) -> int:
        """Apply a member's acknowledgement batches (first, last, types); an error code, NONE when applied.
        With `renew_at_ms` (Kafka 4.2's renew acknowledgements) type 4 renews a record's acquisition lock from
        that time, keeping it acquired by the member with its delivery count."""
        changes: list[tuple[int, int]] = []
        allowed = (ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT) if renew_at_ms is None else (
            ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT, ACK_RENEW)
        for first, last, types in batches:
            if first > last or len(types) not in (1, last - first + 1) or any(t not in allowed for t in types):
                return ErrorCode.INVALID_REQUEST
            for offset in range(first, last + 1):
                info = self.records.get(offset)
                if info is None or info.state is not RecordState.ACQUIRED or info.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                changes.append((offset, types[0] if len(types) == 1 else types[offset - first]))
        for offset, ack in changes:
            info = self.records[offset]
            if ack == ACK_RENEW:
                assert renew_at_ms is not None
                info.deadline_ms = renew_at_ms + self.record_lock_duration_ms  # later: the floor stays a bound
            elif ack == ACK_ACCEPT:
                self._settle(info, RecordState.ACKNOWLEDGED)
            elif ack == ACK_RELEASE:
                self._release(info)
            else:
                self._settle(info, RecordState.ARCHIVED)
        self._advance_start()
        return ErrorCode.NONE

    def _settle(self, info: InFlight, state: RecordState) -> None:
        """An ACQUIRED offset leaves that state."""
        info.state, info.member_id, info.deadline_ms = state, None, 0
        if state is RecordState.AVAILABLE:
            self._available += 1

    def _release(self, info: InFlight) -> None:
        final = info.delivery_count >= self.delivery_count_limit
        self._settle(info, RecordState.ARCHIVED if final else RecordState.AVAILABLE)

    def release_member(self, member_id: str) -> bool:
        """Release every offset `member_id` holds; whether any was."""
        released = False
        for info in self.records.values():
            if info.state is RecordState.ACQUIRED and info.member_id == member_id:
                self._release(info)
                released = True
        if released:
            self._advance_start()
        return released

    def expire_locks(self, now_ms: int) -> bool:
        """Release offsets whose acquisition lock ran out; whether any did."""
        if self._deadline_floor is None or now_ms < self._deadline_floor:
            return False  # no lock can have run out yet
        expired = False
        floor: int | None = None
        for info in self.records.values():
            if info.state is RecordState.ACQUIRED:
                if info.deadline_ms <= now_ms:
                    self._release(info)
                    expired = True
                elif floor is None or info.deadline_ms < floor:
                    floor = info.deadline_ms
        self._deadline_floor = floor
        if expired:
            self._advance_start()
        return expired

    def next_deadline_ms(self) -> int | None:
        """When a lock may run out next (at the earliest; None: no offset is acquired)."""
        return self._deadline_floor

    def _advance_start(self) -> None:
        offset = self.start_offset
        while offset < self.end_offset:
            info = self.records.get(offset)
            if info is not None and info.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            self.records.pop(offset, None)
            self.batch_last.pop(offset, None)
            offset += 1
        self.start_offset = offset

    # ---------------------------------------------------------------- persistence
    def persisted_state(self, state_epoch: int, leader_epoch: int) -> SharePartitionState:
        # Called after every acknowledgement over the whole window (up to max_in_flight offsets): runs are
        # tracked in locals and a batch object is made once per run, not once per offset (that allocation was
        # most of a share-group consumer's cost on the broker, franz-go's TestShareGroupETL).
        batches: list[PersisterStateBatch] = []
        records = self.records
        acquired, available = RecordState.ACQUIRED, RecordState.AVAILABLE
        run_first = run_last = -2
        run_state: RecordState | None = None
        run_count = 0
        for offset, info in records.items():
            state, count = info.state, info.delivery_count
            if state is acquired:
                state = available
            if state is available and count == 0:
                continue
            if offset == run_last + 1 and state is run_state and count == run_count:
                run_last = offset
                continue
            if run_state is not None:
                batches.append(PersisterStateBatch(run_first, run_last, int(run_state), run_count))
            run_first = run_last = offset
            run_state, run_count = state, count
        if run_state is not None:
            batches.append(PersisterStateBatch(run_first, run_last, int(run_state), run_count))
        return SharePartitionState(state_epoch, self.start_offset, batches, leader_epoch)

    def restore(self, state: SharePartitionState) -> None:
        self.start_offset = self.end_offset = state.start_offset
        self.records = {}
        self.batch_last = {}
        self._deadline_floor = None  # nothing restored is acquired
        for batch in state.batches:
            if batch.last_offset < state.start_offset:
                continue
            recorded = RecordState(batch.delivery_state)
            if recorded is RecordState.ACQUIRED:
                recorded = RecordState.AVAILABLE
            for offset in range(max(batch.first_offset, state.start_offset), batch.last_offset + 1):
                self.records[offset] = InFlight(recorded, batch.delivery_count)
        # Offsets between the persisted batches were never delivered: they are fetched again from the log.
        if self.records:
            end = max(self.records) + 1
            for offset in range(state.start_offset, end):
                if offset not in self.records:
                    self.records[offset] = InFlight()
            self.records = dict(sorted(self.records.items()))  # the gaps were added last: offset order again
            self.end_offset = end
        self._available = sum(1 for i in self.records.values() if i.state is RecordState.AVAILABLE)
        self._advance_start()
