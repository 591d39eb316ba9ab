"""The share-partition manager (KIP-932, Kafka's SharePartitionManager and ShareSessionCache): what a broker
keeps for the share groups reading the partitions it leads.

Contract:
- Share sessions, one per (group, member): ShareFetch epoch 0 opens one (replacing the member's previous
  session, whose acquired records are released), every later ShareFetch/ShareAcknowledge must carry the
  session's next epoch (SHARE_SESSION_NOT_FOUND without a session, INVALID_SHARE_SESSION_EPOCH for another
  epoch), epoch -1 closes it and releases what the member still holds. A session remembers the partitions the
  member fetches (requests add partitions; ForgottenTopicsData removes them).
- Share partitions, one per (group, topic partition) on its leader, created on first use: the state is read
  through the `Persister` (from `create_persister`, the one place that chooses it); a share partition
  never initialized starts at the group's `share.auto.offset.reset` (a group config, broker/config/group_configs.py:
  latest, Kafka's default, is the high watermark; earliest the log start offset; by_duration:<d> the first
  record at most d old) and is initialized in the persister. The group config `share.record.lock.duration.ms`
  sets its acquisition locks. Every acknowledgement, release and lock expiry is written through the persister
  before the client hears of it. A change of leader epoch reloads the state.
- Records are read through the replica manager's read path (`fetch_messages`, up to the high watermark,
  without waiting) and acquired whole batches at a time (see share_partition.py); the records returned are
  the log batches that hold the acquired offsets, untouched.
- A ShareFetch with nothing to acquire waits up to its MaxWaitMs: it is woken by a release or lock expiry
  here, or by an append past a window's end (parked in the replica manager's fetch purgatory, as a Fetch).
- A session ends with the connection that opened it (Kafka 4.1): a member that crashes has its acquired records
  released at once instead of at the end of their locks.
- `share.isolation.level` (a group config): read_uncommitted (Kafka's default) hands out every record up to the
  high watermark; read_committed only those up to the last stable offset, aborted transactions' records
  archived at once (log_batches.py).
- When the last share session of a group ends here, its share partitions are dropped (Kafka's onGroupEmpty),
  so the next fetch reads their state again.
- Gaps: a changed group config applies to share partitions loaded afterwards; the in-memory state is not
  rolled back when a persister write fails (the client gets the error).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from broker.cluster.partition import FETCH_HIGH_WATERMARK, FETCH_TXN_COMMITTED
from broker.config.group_configs import GroupConfigsServer, by_duration_ms, group_configs
from broker.coordinator.group.share_group import ShareGroupConfig, share_group_config
from broker.coordinator.share.persister import Persister, PersisterError, persister_error_code
from broker.server.delayed_fetch import FetchParams, PartitionFetchInfo
from broker.share.log_batches import LogBatch, deliverable, parse_batches
from broker.share.persisters import create_persister
from broker.share.share_partition import AcquiredRange, SharePartition
from protocol.errors import ErrorCode
from storage import TopicPartition

if TYPE_CHECKING:
    from broker.metadata.metadata_cache import MetadataCache
    from broker.server.replica_manager import ReplicaManager

log = logging.getLogger(__name__)

INITIAL_EPOCH, FINAL_EPOCH = 0, -1
_POLL_S = 0.05
_READ_BYTES = 1 << 20


class ShareError(Exception):
    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    partitions: dict[TopicPartition, uuid.UUID] = field(default_factory=dict)
    connection: Any = None  # the connection that opened it: its close ends the session


@dataclass
class _Entry:
    share: SharePartition
    tp: TopicPartition
    topic_id: uuid.UUID
    state_epoch: int
    leader_epoch: int
    read_committed: bool = False  # the group's share.isolation.level when the state was loaded
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    timer: asyncio.TimerHandle | None = None


@dataclass
class FetchedPartition:
    error: int = ErrorCode.NONE
    records: bytes = b""
    acquired: list[AcquiredRange] = field(default_factory=list)


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


class ShareServer(GroupConfigsServer, Protocol):
    """The broker as its share-partition leaders see it (KafkaServer): its config, controller and group configs,
    its metadata cache, and the replica manager whose partitions they read. `share_partition_manager(server)` keeps
    the one `SharePartitionManager` of a broker on it; its `share_persister`, when it has one, is theirs
    (persisters.py)."""

    metadata_cache: MetadataCache
    replica_manager: ReplicaManager


class SharePartitionManager:
    def __init__(self, server: ShareServer, persister: Persister, config: ShareGroupConfig) -> None:
        self.server = server
        self.persister = persister
        self.config = config
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.partitions: dict[tuple[str, TopicPartition], _Entry] = {}
        self._init_locks: dict[tuple[str, TopicPartition], asyncio.Lock] = {}
        # A test's override of the group config share.auto.offset.reset ("" = the group config decides).
        self.auto_offset_reset: Callable[[str], str] = lambda group_id: ""
        self._wakeup: asyncio.Future[None] | None = None
        self._watched: set[int] = set()

    def lock_duration_ms(self, group_id: str) -> int:
        """The group's `share.record.lock.duration.ms` (its group config, else the broker's)."""
        overrides = group_configs(self.server).cached(group_id) if self.server.controller is not None else {}
        return int(overrides.get("share.record.lock.duration.ms", self.config.record_lock_duration_ms))

    @staticmethod
    def now_ms() -> int:
        return int(time.monotonic() * 1000)

    # ---------------------------------------------------------------- sessions
    def session(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        """The member's session for a request at `epoch` (not 0), its epoch moved on; ShareError otherwise."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise ShareError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {member_id}")
        if epoch != FINAL_EPOCH:
            if epoch != session.epoch:
                raise ShareError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                 f"share session epoch {epoch}, expected {session.epoch}")
            session.epoch = next_epoch(session.epoch)
        return session

    async def open_session(self, group_id: str, member_id: str, connection: Any = None) -> ShareSession:
        old = self.sessions.pop((group_id, member_id), None)
        if old is not None:
            await self.release_member(old)
        session = self.sessions[(group_id, member_id)] = ShareSession(group_id, member_id, 1, connection=connection)
        if connection is not None:
            self._watch(connection.server)
        return session

    def _watch(self, socket_server: Any) -> None:
        """Hear of the listener's closed connections: a member whose connection drops (a crash, kill -9)
        has its share sessions closed and its records released at once, as Kafka 4.1 does."""
        if id(socket_server) in self._watched:
            return
        self._watched.add(id(socket_server))
        previous = socket_server.on_close

        def on_close(conn: Any) -> None:
            if previous is not None:
                previous(conn)
            self.connection_closed(conn)
        socket_server.on_close = on_close

    def connection_closed(self, conn: Any) -> None:
        for session in [s for s in self.sessions.values() if s.connection is conn]:
            self.sessions.pop((session.group_id, session.member_id), None)
            task = asyncio.get_running_loop().create_task(self.release_member(session))
            task.add_done_callback(lambda t: None if t.cancelled() else t.exception())

    async def close_session(self, session: ShareSession) -> None:
        self.sessions.pop((session.group_id, session.member_id), None)
        await self.release_member(session)

    async def release_member(self, session: ShareSession) -> None:
        for (group_id, _), entry in list(self.partitions.items()):
            if group_id == session.group_id and entry.share.release_member(session.member_id):
                await self._persist(group_id, entry)
        if not any(g == session.group_id for g, _ in self.sessions):
            # The group's last share session here ended (Kafka's onGroupEmpty): its share partitions are
            # dropped, so the next fetch reads the state again and sees an admin's change meanwhile
            # (AlterShareGroupOffsets, DeleteShareGroupOffsets), wherever the group coordinator is.
            self.forget(session.group_id, [tp for g, tp in self.partitions if g == session.group_id])
        self._wake()

    # ---------------------------------------------------------------- share partitions
    async def entry(self, group_id: str, tp: TopicPartition, topic_id: uuid.UUID) -> _Entry:
        partition = self.server.replica_manager.partitions.get(tp)
        if partition is None:
            # As Kafka's getPartitionOrError: a partition the metadata knows is led elsewhere.
            known = self.server.metadata_cache.partition(tp.topic, tp.partition) is not None
            raise ShareError(ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if not partition.is_leader:
            raise ShareError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        key = (group_id, tp)
        entry = self.partitions.get(key)
        if entry is not None and entry.leader_epoch == partition.leader_epoch and entry.topic_id == topic_id:
            return entry
        lock = self._init_locks.setdefault(key, asyncio.Lock())
        async with lock:
            entry = self.partitions.get(key)
            if entry is not None and entry.leader_epoch == partition.leader_epoch and entry.topic_id == topic_id:
                return entry
            if entry is not None and entry.timer is not None:
                entry.timer.cancel()
            entry = await self._load(group_id, tp, topic_id, partition)
            self.partitions[key] = entry
            return entry

    async def _load(self, group_id: str, tp: TopicPartition, topic_id: uuid.UUID, partition: Any) -> _Entry:
        leader_epoch = partition.leader_epoch
        cfg = self.config
        configs = group_configs(self.server)
        overrides = await configs.overrides(group_id) if self.server.controller is not None else {}
        try:
            state = await self.persister.read(group_id, topic_id.bytes, tp.partition, leader_epoch)
            share = SharePartition(0, record_lock_duration_ms=int(
                                       overrides.get("share.record.lock.duration.ms", cfg.record_lock_duration_ms)),
                                   delivery_count_limit=cfg.delivery_count_limit,
                                   max_in_flight=int(overrides.get("share.partition.max.record.locks",
                                                                   cfg.partition_max_record_locks)))
            state_epoch = state.state_epoch
            if state.start_offset < 0:
                reset = self.auto_offset_reset(group_id) or overrides.get("share.auto.offset.reset", "latest")
                start = self._reset_offset(partition, reset)
                if state_epoch == 0:
                    state_epoch = 1
                    await self.persister.initialize(group_id, topic_id.bytes, tp.partition, state_epoch, start)
                share.reset_start(start)
            else:
                share.restore(state)
        except PersisterError as e:
            raise ShareError(persister_error_code(e.error_code), str(e)) from e
        share.reset_start(partition.log_start_offset)
        log.info("share group %s: %s starts at offset %d (state epoch %d)", group_id, tp, share.start_offset,
                 state_epoch)
        read_committed = overrides.get("share.isolation.level") == "read_committed"
        return _Entry(share, tp, topic_id, state_epoch, leader_epoch, read_committed)

    @staticmethod
    def _reset_offset(partition: Any, reset: str) -> int:
        """Where a share partition never initialized starts: the log start (earliest), the first record at
        most the duration old (by_duration:..., the high watermark when there is none), else the high
        watermark (latest)."""
        if reset == "earliest":
            return int(partition.log_start_offset)
        duration = by_duration_ms(reset)
        if duration is not None:
            offset = partition.fetch_offset_for_timestamp(int(time.time() * 1000) - duration, -1,
                                                          from_replica=False)[0]
            if offset >= 0:
                return int(offset)
        return int(partition.high_watermark)

    async def _persist(self, group_id: str, entry: _Entry) -> int:
        try:
            async with entry.lock:
                # Taken under the lock: writes reach the persister in the order of the changes.
                state = entry.share.persisted_state(entry.state_epoch, entry.leader_epoch)
                await self.persister.write(group_id, entry.topic_id.bytes, entry.tp.partition, state)
        except PersisterError as e:
            log.warning("share group %s: state write failed: %s", group_id, e)
            code = persister_error_code(e.error_code)
            if code in (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER):
                # Fenced (an admin reset the state, or another leader writes it): this copy is dropped and the
                # next request loads the state again, as Kafka's fenced share-partition handler does.
                if self.partitions.get((group_id, entry.tp)) is entry:
                    del self.partitions[(group_id, entry.tp)]
                    if entry.timer is not None:
                        entry.timer.cancel()
            return code
        return ErrorCode.NONE

    async def delete_group(self, group_id: str) -> None:
        """A deleted share group: its share partitions here are dropped and their state deleted."""
        for key in [k for k in self.partitions if k[0] == group_id]:
            entry = self.partitions.pop(key)
            if entry.timer is not None:
                entry.timer.cancel()
            try:
                await self.persister.delete(group_id, entry.topic_id.bytes, entry.tp.partition)
            except PersisterError as e:
                log.warning("share group %s: state of %s not deleted: %s", group_id, entry.tp, e)

    def forget(self, group_id: str, tps: list[TopicPartition]) -> None:
        """An admin changed these share partitions' state (AlterShareGroupOffsets, DeleteShareGroupOffsets): what
        is held here is dropped, so the next request reads the new state."""
        for tp in tps:
            entry = self.partitions.pop((group_id, tp), None)
            if entry is not None and entry.timer is not None:
                entry.timer.cancel()

    def partitions_of(self, group_id: str, topic: str) -> list[TopicPartition]:
        return [tp for g, tp in self.partitions if g == group_id and tp.topic == topic]

    # ---------------------------------------------------------------- acknowledgements
    async def acknowledge(self, group_id: str, member_id: str, tp: TopicPartition, topic_id: uuid.UUID,
                          batches: list[tuple[int, int, list[int]]], renew: bool = False) -> int:
        try:
            entry = await self.entry(group_id, tp, topic_id)
        except ShareError as e:
            return e.code
        error = entry.share.acknowledge(member_id, batches, self.now_ms() if renew else None)
        if error != ErrorCode.NONE:
            return error
        if renew:
            self._schedule_expiry(group_id, entry)  # renewed locks end later
        self._wake()
        return await self._persist(group_id, entry)

    # ---------------------------------------------------------------- fetching
    async def fetch(self, group_id: str, member_id: str, wanted: list[tuple[TopicPartition, uuid.UUID]],
                    max_records: int, max_bytes: int, max_wait_ms: int, record_limit: bool = False
                    ) -> dict[TopicPartition, FetchedPartition]:
        if not wanted or max_records == 0 or max_bytes == 0:
            return {}  # nothing asked for: answered at once, as Kafka's processShareFetch
        deadline = time.monotonic() + max(max_wait_ms, 0) / 1000
        while True:
            out = await self._fetch_once(group_id, member_id, wanted, max_records, max_bytes, record_limit)
            remaining = deadline - time.monotonic()
            if any(r.acquired or r.error for r in out.values()) or remaining <= 0:
                return out
            await self._wait_for_records(group_id, wanted, remaining)

    async def _wait_for_records(self, group_id: str, wanted: list[tuple[TopicPartition, uuid.UUID]],
                                timeout: float) -> None:
        """Until a record is appended past a share partition's window (the fetch purgatory, as a consumer's
        Fetch waits), a record is released here, or `timeout`."""
        infos = []
        for tp, _ in wanted:
            entry = self.partitions.get((group_id, tp))
            if entry is not None and entry.share.can_fetch_more:
                infos.append((tp, PartitionFetchInfo(entry.share.end_offset, 1)))
        waiters: set[asyncio.Future[Any]] = set()
        if infos:
            params = FetchParams(replica_id=-1, max_wait_ms=max(int(timeout * 1000), 1), min_bytes=1,
                                 max_bytes=1, isolation=FETCH_HIGH_WATERMARK)
            parked = self.server.replica_manager.fetch_messages(params, infos)
            if not isinstance(parked, asyncio.Future):
                timeout = min(timeout, _POLL_S)  # answered at once (an error, a full window): do not spin
            else:
                waiters.add(parked)
        if self._wakeup is None:
            self._wakeup = asyncio.get_running_loop().create_future()
        waiters.add(self._wakeup)
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                if waiter is not self._wakeup and not waiter.done():
                    waiter.cancel()  # the parked fetch completes nothing once cancelled

    async def _fetch_once(self, group_id: str, member_id: str, wanted: list[tuple[TopicPartition, uuid.UUID]],
                          max_records: int, max_bytes: int, record_limit: bool
                          ) -> dict[TopicPartition, FetchedPartition]:
        out: dict[TopicPartition, FetchedPartition] = {}
        left = max(max_records, 1)
        for tp, topic_id in wanted:
            try:
                entry = await self.entry(group_id, tp, topic_id)
            except ShareError as e:
                out[tp] = FetchedPartition(e.code)
                continue
            if left <= 0:
                out[tp] = FetchedPartition()
                continue
            result = self._acquire(group_id, tp, entry, member_id, left, max_bytes, record_limit)
            left -= sum(r.last_offset - r.first_offset + 1 for r in result.acquired)
            out[tp] = result
        return out

    def _acquire(self, group_id: str, tp: TopicPartition, entry: _Entry, member_id: str, max_records: int,
                 max_bytes: int, record_limit: bool = False) -> FetchedPartition:
        partition = self.server.replica_manager.partitions.get(tp)
        if partition is None or not partition.is_leader:
            return FetchedPartition(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        share = entry.share
        now = self.now_ms()
        share.reset_start(partition.log_start_offset)
        if share.expire_locks(now):
            self._spawn_persist(group_id, entry)
        bound = partition.last_stable_offset if entry.read_committed else partition.high_watermark
        if share.available_count() < max_records and share.can_fetch_more and share.end_offset < bound:
            batches, ok, error = self._read(tp, share.end_offset, max_bytes, entry.read_committed)
            if error != ErrorCode.NONE:
                return FetchedPartition(error)
            for batch, may in zip(batches, ok, strict=True):
                share.add_fetched(batch.first_offset, batch.last_offset, deliverable=may)
        acquired = share.acquire(member_id, max_records, now, record_limit)
        if not acquired:
            return FetchedPartition()
        self._schedule_expiry(group_id, entry)
        return FetchedPartition(ErrorCode.NONE, self._records_for(tp, acquired, max_bytes), acquired)

    def _records_for(self, tp: TopicPartition, acquired: list[AcquiredRange], max_bytes: int) -> bytes:
        """The log batches holding the acquired offsets, as stored."""
        first, last = acquired[0].first_offset, acquired[-1].last_offset
        chunks: list[bytes] = []
        offset = first
        while offset <= last:
            batches, _, error = self._read(tp, offset, max(max_bytes, 1))
            if error != ErrorCode.NONE or not batches:
                break
            for b in batches:
                if b.last_offset < offset or b.first_offset > last:
                    continue
                if any(r.first_offset <= b.last_offset and r.last_offset >= b.first_offset for r in acquired):
                    chunks.append(b.raw)
            offset = batches[-1].last_offset + 1
        return b"".join(chunks)

    def _read(self, tp: TopicPartition, offset: int, max_bytes: int, read_committed: bool = False
              ) -> tuple[list[LogBatch], list[bool], int]:
        """(the whole batches from `offset`, whether each may be delivered, an error code): up to the high
        watermark, or the last stable offset with `read_committed` (aborted transactions' batches not
        deliverable)."""
        params = FetchParams(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max(max_bytes, 1),
                             isolation=FETCH_TXN_COMMITTED if read_committed else FETCH_HIGH_WATERMARK)
        result = self.server.replica_manager.fetch_messages(
            params, [(tp, PartitionFetchInfo(offset, min(max(max_bytes, 1), _READ_BYTES)))])
        assert isinstance(result, list)  # max_wait_ms 0: answered at once
        data = result[0][1]
        if data.error != ErrorCode.NONE:
            return [], [], data.error
        if data.records is None or data.size == 0:
            return [], [], ErrorCode.NONE
        batches = parse_batches(data.records.read())  # type: ignore[attr-defined]
        aborted = [(a.producer_id, a.first_offset) for a in data.aborted_transactions or []] \
            if read_committed else None
        return batches, deliverable(batches, aborted), ErrorCode.NONE

    # ---------------------------------------------------------------- lock expiry and waiting
    def _schedule_expiry(self, group_id: str, entry: _Entry) -> None:
        deadline = entry.share.next_deadline_ms()
        if deadline is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        delay = max(deadline - self.now_ms(), 0) / 1000

        def expire() -> None:
            entry.timer = None
            partition = self.server.replica_manager.partitions.get(entry.tp)
            if partition is None or not partition.is_leader or partition.leader_epoch != entry.leader_epoch:
                # No longer this partition's leader (or a newer epoch reloads it): the state is the new
                # leader's to keep, this copy is dropped.
                if self.partitions.get((group_id, entry.tp)) is entry:
                    del self.partitions[(group_id, entry.tp)]
                return
            if entry.share.expire_locks(self.now_ms()):
                self._spawn_persist(group_id, entry)
                self._wake()
            self._schedule_expiry(group_id, entry)
        entry.timer = asyncio.get_running_loop().call_later(delay, expire)

    def _spawn_persist(self, group_id: str, entry: _Entry) -> None:
        task = asyncio.get_running_loop().create_task(self._persist(group_id, entry))
        task.add_done_callback(lambda t: None if t.cancelled() else t.exception())

    def _wake(self) -> None:
        if self._wakeup is not None and not self._wakeup.done():
            self._wakeup.set_result(None)
        self._wakeup = None



def share_partition_manager(server: ShareServer) -> SharePartitionManager:
    """The broker's manager, made on first use."""
    manager = getattr(server, "share_partition_manager", None)
    if manager is None:
        manager = SharePartitionManager(server, create_persister(server), share_group_config(server.config))
        server.share_partition_manager = manager  # type: ignore[attr-defined]
    return manager
