"""The metadata log follower: a KRaft broker is an observer of the controller quorum (KIP-595), fetching
`__cluster_metadata-0` from the quorum leader and loading what the quorum has committed.

Contract (Kafka 3.9's KafkaRaftClient as an observer, and its MetadataLoader feed):
- Fetch of topic id AAAAAAAAAAAAAAAAAAAAAQ (Uuid(0, 1)) partition 0, with our node id as replica id (Fetch v15+
  ReplicaState, the field replica_id before) and the metadata log dir's directory id (v17+), our cluster id,
  the leader epoch we know as current leader epoch, the next offset and the epoch of the last batch we hold,
  and our high watermark (v18+, KIP-1166); the leader waits up to 500 ms (Kafka's raft fetch max wait) when there
  is nothing new. A Raft leader refuses a fetch whose last fetched epoch is negative or above the current leader
  epoch (INVALID_REQUEST): both start at 0 (an empty log's last epoch is 0, a new observer's epoch 0), and a
  restart starts from the larger of quorum-state's epoch and the log's last.
- On a combined node (process.roles=broker,controller) the replica id is -1 and nothing goes to disk (the
  node's controller keeps `__cluster_metadata-0/`): the Raft leader serves it as an anonymous observer.
- The leader: the voter `controller.quorum.voters` names by the id the quorum reports, or the endpoint a
  Fetch v16+ answer gives for it (NodeEndpoints, KIP-853: how a broker configured with
  `controller.quorum.bootstrap.servers` only finds it); before one is known, the voters (or the bootstrap
  servers) in turn. NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH take the
  CurrentLeader of the answer when it is newer (a retarget), else try the next voter after
  `controller.quorum.retry.backoff.ms`; so do connection failures.
- A DivergingEpoch truncates what we hold to its end offset (at a batch boundary at or below it) before the
  next fetch, as Kafka's follower truncates to the leader's epoch end offset.
- Records are held until committed: every batch whose last offset is below the high watermark goes to the
  MetadataLoader, which publishes once per fetch (`on_publish`).
- `applied_offset` is the last offset of the published image, what BrokerHeartbeat reports;
  `leader_endpoint()` the quorum leader's (host, port), which the lifecycle manager sends its requests to.
- A SnapshotId in the answer (our fetch offset is below the leader's log start) is fetched with FetchSnapshot
  (v0-1, chunk by chunk), kept in `snapshot_dir` as `<end offset>-<epoch>.checkpoint` and loaded as the new
  image (`MetadataLoader.load_snapshot`); fetching goes on from its end offset.
- With a `store` (broker/kraft/metadata_log.py) fetched batches, truncations and snapshots go to
  `__cluster_metadata-0/` and `quorum-state` follows the leader; a restart loads the latest snapshot there at
  once and holds the batches after it until the first answer's high watermark commits them, then fetches
  from where the log ends. The broker writes its own snapshots as Kafka's does (`_maybe_snapshot`), after
  which the log starts at the snapshot's end.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.kraft.loader import MetadataLoader
from broker.kraft.metadata_log import MetadataLogStore
from broker.network.inter_broker import BrokerConnection, BrokerUnavailable
from broker.security.client import ClientSecurity
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.metadata_records import (
    KRaftVersionRecord,
    MetadataParseError,
    decode_metadata_batch,
    decode_metadata_batches,
)
from records import CorruptRecordError, InvalidRecordError, iter_batches

log = logging.getLogger("broker.kraft.raft")

METADATA_TOPIC_ID = uuid.UUID(int=1)
FETCH_MAX_WAIT_MS = 500  # Kafka's KafkaRaftClient.FETCH_MAX_WAIT_MS
_RETARGET = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH)


def _whole_batches(view: memoryview) -> list[Any]:
    """The complete batches of a fetch answer; a size-limited read may end inside the last one, which is
    fetched again next time (Kafka's reader ignores such a tail too)."""
    out: list[Any] = []
    try:
        for raw in iter_batches(view):
            out.append(raw)
    except CorruptRecordError as e:
        if not ("runs past the end" in str(e) or "trailing bytes" in str(e)):
            raise
    return out


@dataclass
class HeldBatch:
    base_offset: int
    next_offset: int
    epoch: int
    batch: Any  # protocol.metadata_records.MetadataBatch
    size: int = 0  # its bytes, counted towards the next snapshot


class MetadataLogFollower:
    def __init__(self, node_id: int, cluster_id: str, loader: MetadataLoader, *,
                 voters: dict[int, tuple[str, int]], bootstrap: list[tuple[str, int]] | None = None,
                 security: ClientSecurity | None = None, request_timeout_ms: int = 2000,
                 retry_backoff_ms: int = 20, snapshot_dir: Path | None = None,
                 store: MetadataLogStore | None = None, snapshot_max_bytes: int = 20971520,
                 snapshot_interval_ms: int = 3600000, directory_id: uuid.UUID | None = None,
                 replica_id: int | None = None) -> None:
        self.node_id = node_id
        # The replica id our fetches carry: the node id, or -1 on a combined node whose id is a voter's (the Raft
        # leader must not count the broker's fetch offset as that voter's log end).
        self.replica_id = node_id if replica_id is None else replica_id
        # The metadata log dir's directory.id, our replica key with the node id (Fetch v17+, KIP-853)
        self.directory_id = directory_id or uuid.UUID(int=0)
        self.cluster_id = cluster_id
        self.snapshot_max_bytes = snapshot_max_bytes
        self.snapshot_interval_ms = snapshot_interval_ms
        self._bytes_since_snapshot = 0
        self._last_snapshot = time.monotonic()
        self.store = store  # the metadata log on disk (`__cluster_metadata-0/`), or None: in memory only
        self.snapshot_dir = store.dir if store is not None else snapshot_dir  # where fetched snapshots are kept
        self.loader = loader
        self.voters = voters
        self.bootstrap = bootstrap or []
        self.security = security or ClientSecurity()
        self.request_timeout_s = request_timeout_ms / 1000
        self.retry_backoff_s = max(retry_backoff_ms, 20) / 1000
        self.leader_id = -1
        # Kafka's observer starts unattached at the epoch of its quorum-state (0 when new) and sends it as the
        # current leader epoch; a Raft leader refuses (INVALID_REQUEST) a fetch whose last fetched epoch is
        # negative or above that epoch, so both start at 0, as an empty log's last epoch is 0.
        self.leader_epoch = 0
        self.high_watermark = -1
        self.node_endpoints: dict[int, tuple[str, int]] = {}  # from Fetch v16+ NodeEndpoints (KIP-853)
        self.held: list[HeldBatch] = []  # fetched, not yet applied (above the high watermark)
        self.end_offset = 0  # next offset to fetch
        self.last_epoch = 0  # epoch of the last batch held or applied (0: none)
        self._conn: tuple[tuple[str, int], BrokerConnection] | None = None
        self._candidate = 0
        self._task: asyncio.Task | None = None
        self.on_leader_change: Callable[[int, int], None] | None = None
        self.on_fetch_error: Callable[[ErrorCode], None] | None = None

    # ---- state the rest of the broker reads
    @property
    def applied_offset(self) -> int:
        return self.loader.image.offset

    def leader_endpoint(self) -> tuple[str, int] | None:
        if self.leader_id < 0:
            return None
        return self.voters.get(self.leader_id) or self.node_endpoints.get(self.leader_id)

    # ---- lifecycle
    def start(self) -> None:
        if self.store is not None:
            self._load_local_log()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kraft-metadata-fetch")

    def _load_local_log(self) -> None:
        """What an earlier run left on disk: its latest snapshot is loaded at once; the batches after it are
        held until the quorum's high watermark says they are committed."""
        assert self.store is not None
        snapshot, data = self.store.load()
        if snapshot is not None:
            from broker.kraft.snapshot import read_snapshot_contents

            header, records, controls = read_snapshot_contents(self.store.snapshot_path(snapshot))
            self.loader.load_control_records(controls)
            self.loader.load_snapshot(snapshot.end_offset, snapshot.epoch, header.last_contained_log_timestamp,
                                      [r.message for r in records])
            self.end_offset, self.last_epoch = snapshot.end_offset, snapshot.epoch
        for batch in decode_metadata_batches(memoryview(data)):
            if batch.base_offset >= self.end_offset:
                self.held.append(HeldBatch(batch.base_offset, batch.last_offset + 1, batch.epoch, batch))
                self.end_offset, self.last_epoch = batch.last_offset + 1, batch.epoch
        # As Kafka's QuorumState at start-up: never an epoch below the log's own last epoch.
        self.leader_epoch = max(self.store.read_quorum_epoch(), self.last_epoch)
        if snapshot is not None or self.held:
            log.info("metadata log on disk: snapshot %s, %d batches up to offset %d", snapshot, len(self.held),
                     self.end_offset)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None
        if self.store is not None:
            self.store.close()

    def _target(self) -> tuple[str, int]:
        leader = self.leader_endpoint()
        if leader is not None:
            return leader
        candidates = list(self.voters.values()) or self.bootstrap
        return candidates[self._candidate % len(candidates)]

    def _connection(self) -> BrokerConnection:
        target = self._target()
        if self._conn is None or self._conn[0] != target:
            if self._conn is not None:
                self._conn[1].close()
            conn = BrokerConnection(target[0], target[1], f"raft-broker-{self.node_id}",
                                    timeout_s=self.request_timeout_s + FETCH_MAX_WAIT_MS / 1000,
                                    security=self.security)
            self._conn = (target, conn)
        return self._conn[1]

    def _lose_leader(self) -> None:
        self.leader_id = -1
        self._candidate += 1
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None

    async def _run(self) -> None:
        while True:
            try:
                progressed = await self.fetch_once()
            except BrokerUnavailable as e:
                log.debug("metadata fetch from %s failed: %s", self._target(), e)
                self._lose_leader()
                progressed = False
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("metadata fetch failed")
                progressed = False
            if not progressed:
                await asyncio.sleep(self.retry_backoff_s)

    # ---- one fetch
    def _build(self, version: int) -> Any:
        Req = request_class(ApiKey.FETCH)
        part = Req.FetchTopic.FetchPartition(
            partition=0, current_leader_epoch=self.leader_epoch, fetch_offset=self.end_offset,
            last_fetched_epoch=self.last_epoch, log_start_offset=-1, partition_max_bytes=8 * 1024 * 1024)
        if version >= 17:
            part.replica_directory_id = self.directory_id
        if version >= 18 and self.high_watermark >= 0:
            # KIP-1166: the leader answers at once when its high watermark is past ours, instead of holding the
            # fetch for max_wait_ms with nothing new to send but the commit of what we already hold.
            part.high_watermark = self.high_watermark
        fields: dict[str, Any] = dict(
            max_wait_ms=FETCH_MAX_WAIT_MS, min_bytes=0, max_bytes=8 * 1024 * 1024, isolation_level=0,
            session_id=0, session_epoch=-1, topics=[Req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=[part])],
            forgotten_topics_data=[], rack_id="", cluster_id=self.cluster_id)
        if version >= 15:
            fields.update(replica_id=-1, replica_state=Req.ReplicaState(replica_id=self.replica_id, replica_epoch=-1))
        else:
            fields["replica_id"] = self.replica_id
        return Req[version](**fields)

    async def fetch_once(self) -> bool:
        """One Fetch and what follows from its answer; False when the caller should back off."""
        resp = await self._connection().send(self._build, ApiKey.FETCH)
        if resp.error_code != ErrorCode.NONE:
            error = ErrorCode(resp.error_code)
            log.warning("metadata fetch from %s: %s", self._target(), error.name)
            if self.on_fetch_error is not None:
                self.on_fetch_error(error)
            self._lose_leader()
            return False
        for node in getattr(resp, "node_endpoints", None) or ():
            self.node_endpoints[node.node_id] = (node.host, node.port)
        partition = resp.responses[0].partitions[0]
        error = ErrorCode(partition.error_code)
        leader = partition.current_leader
        if leader is not None and leader.leader_id >= 0 and leader.leader_epoch >= self.leader_epoch and \
                (leader.leader_id, leader.leader_epoch) != (self.leader_id, self.leader_epoch):
            log.info("metadata quorum leader: %d at epoch %d", leader.leader_id, leader.leader_epoch)
            self.leader_id, self.leader_epoch = leader.leader_id, leader.leader_epoch
            if self.store is not None:
                self.store.write_quorum_state(self.leader_id, self.leader_epoch, list(self.voters))
            if self.on_leader_change is not None:
                self.on_leader_change(self.leader_id, self.leader_epoch)
            if error in _RETARGET:
                return True  # retargeted: fetch from the new leader at once
        if error in _RETARGET:
            self._lose_leader()
            return False
        if error != ErrorCode.NONE:
            log.warning("metadata fetch: %s", error.name)
            return False
        div = partition.diverging_epoch
        if div is not None and div.epoch >= 0 and div.end_offset >= 0:
            self.truncate(div.epoch, div.end_offset)
            return True
        if partition.snapshot_id is not None and partition.snapshot_id.end_offset >= 0:
            if partition.high_watermark >= 0:
                self.high_watermark = partition.high_watermark
            return await self.fetch_snapshot(partition.snapshot_id.end_offset, partition.snapshot_id.epoch)
        records = partition.records
        got = False
        if records:
            try:
                batches = [(raw, decode_metadata_batch(raw)) for raw in _whole_batches(memoryview(records))
                           if raw.base_offset >= self.end_offset]
            except (MetadataParseError, CorruptRecordError, InvalidRecordError) as e:
                log.error("metadata log batch at %d cannot be read: %s", self.end_offset, e)
                return False
            if batches and self.store is not None:
                self.store.append(b"".join(bytes(raw.buffer) for raw, _ in batches))
            for raw, batch in batches:
                self.held.append(HeldBatch(batch.base_offset, batch.last_offset + 1, batch.epoch, batch,
                                           raw.size_in_bytes))
                self.end_offset = batch.last_offset + 1
                self.last_epoch = batch.epoch
                got = True
        if partition.high_watermark >= 0:
            self.high_watermark = partition.high_watermark
        self.apply_committed()
        return got or partition.high_watermark >= 0

    async def fetch_snapshot(self, end_offset: int, epoch: int) -> bool:
        """The leader's log starts after what we hold: fetch its snapshot (FetchSnapshot, chunk by chunk from
        position 0), keep it as `<end>-<epoch>.checkpoint` in `snapshot_dir`, load it as the new image and go
        on fetching from its end offset (Kafka's KafkaRaftClient.handleFetchSnapshotResponse)."""
        Req = request_class(ApiKey.FETCH_SNAPSHOT)
        conn = self._connection()
        data = bytearray()
        size = -1
        while size < 0 or len(data) < size:
            position = len(data)

            def build(v: int, position: int = position) -> Any:
                part = Req.TopicSnapshot.PartitionSnapshot(
                    partition=0, current_leader_epoch=self.leader_epoch, position=position,
                    snapshot_id=Req.TopicSnapshot.PartitionSnapshot.SnapshotId(end_offset=end_offset, epoch=epoch))
                return Req[v](cluster_id=self.cluster_id, replica_id=self.node_id, max_bytes=8 * 1024 * 1024,
                              topics=[Req.TopicSnapshot(name="__cluster_metadata", partitions=[part])])

            resp = await conn.send(build, ApiKey.FETCH_SNAPSHOT)
            error = ErrorCode(resp.error_code)
            part = resp.topics[0].partitions[0] if error == ErrorCode.NONE and resp.topics else None
            if part is not None:
                error = ErrorCode(part.error_code)
            if error != ErrorCode.NONE or part is None:
                log.warning("FetchSnapshot %d-%d at %d: %s", end_offset, epoch, position, error.name)
                if error in _RETARGET:
                    self._lose_leader()
                return False
            if part.position != position:
                log.warning("FetchSnapshot answered position %d for %d", part.position, position)
                return False
            size = part.size
            data += bytes(part.unaligned_records or b"")
        from broker.kraft.snapshot import read_snapshot_contents
        from storage.snapshot_file import SnapshotId, snapshot_path

        directory = self.snapshot_dir
        temp = None
        if directory is None:
            import tempfile
            temp = tempfile.TemporaryDirectory()
            directory = Path(temp.name)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = snapshot_path(directory, SnapshotId(end_offset, epoch))
            partial = path.with_name(path.name + ".part")
            partial.write_bytes(data)
            partial.replace(path)
            header, records, controls = read_snapshot_contents(path)
        finally:
            if temp is not None:
                temp.cleanup()
        self.loader.load_control_records(controls)
        self.loader.load_snapshot(end_offset, epoch, header.last_contained_log_timestamp,
                                  [r.message for r in records])
        if self.store is not None:
            self.store.restart_at(end_offset)
        self.held = []
        self.end_offset = end_offset
        self.last_epoch = epoch
        log.info("loaded the quorum's snapshot %d-%d (%d bytes, %d records)", end_offset, epoch, len(data),
                 len(records))
        self.apply_committed()
        return True

    def apply_committed(self) -> None:
        """Load every held batch below the high watermark and publish once."""
        n = 0
        for held in self.held:
            if held.next_offset > self.high_watermark:
                break
            self.loader.load_metadata_batch(held.batch)
            n += 1
        if n:
            self._bytes_since_snapshot += sum(h.size for h in self.held[:n])
            del self.held[:n]
            self.loader.flush()
            self._maybe_snapshot()

    def _maybe_snapshot(self) -> None:
        """Kafka's broker-side SnapshotGenerator: once `snapshot_max_bytes` of records were applied since the last
        snapshot (metadata.log.max.record.bytes.between.snapshots), or `snapshot_interval_ms` passed with some
        (metadata.log.max.snapshot.interval.ms), the published image is written as `<end>-<epoch>.checkpoint`
        beside the log, which a restart then loads instead of replaying the log."""
        if self.store is None or self.loader.in_transaction or self._bytes_since_snapshot == 0:
            return
        now = time.monotonic()
        due = self._bytes_since_snapshot >= self.snapshot_max_bytes or (
            self.snapshot_interval_ms > 0 and (now - self._last_snapshot) * 1000 >= self.snapshot_interval_ms)
        if not due:
            return
        from broker.kraft.snapshot import image_records, write_snapshot
        from storage.snapshot_file import SnapshotId

        image = self.loader.image
        snapshot = SnapshotId(image.offset + 1, image.provenance.last_contained_epoch)
        if snapshot.end_offset <= 0 or self.store.snapshot_path(snapshot).exists():
            return
        # kraft.version 1 lives in control records, not in the image: kept in the header batch as Kafka does
        kraft_version = [KRaftVersionRecord(record_version=0, k_raft_version=self.loader.kraft_version)
                         ] if self.loader.kraft_version > 0 else []
        write_snapshot(self.store.dir, snapshot, image_records(image),
                       last_contained_log_timestamp=image.provenance.last_contained_log_time_ms,
                       timestamp_ms=int(time.time() * 1000), header_extras=kraft_version)
        log.info("wrote metadata snapshot %d-%d after %d bytes of records", snapshot.end_offset, snapshot.epoch,
                 self._bytes_since_snapshot)
        self.store.trim_to(snapshot)
        self._bytes_since_snapshot = 0
        self._last_snapshot = now

    def truncate(self, epoch: int, end_offset: int) -> None:
        """The leader's log diverges from ours after (epoch, end_offset): drop what we hold beyond it."""
        cut = min(end_offset, self.end_offset)
        if cut < self.applied_offset + 1:
            log.error("metadata log divergence at %d below the applied offset %d: not truncating committed data",
                      cut, self.applied_offset)
            cut = self.applied_offset + 1
        self.held = [h for h in self.held if h.next_offset <= cut]
        self.end_offset = self.held[-1].next_offset if self.held else self.applied_offset + 1
        if self.store is not None:
            self.store.truncate_to(self.end_offset)
        self.last_epoch = (self.held[-1].epoch if self.held
                           else max(0, self.loader.image.provenance.last_contained_epoch))
        log.info("metadata log truncated to %d (diverging epoch %d ends at %d)", self.end_offset, epoch, end_offset)
