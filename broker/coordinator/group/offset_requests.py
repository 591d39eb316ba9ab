"""The group coordinator's offset requests: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete.

Kafka's GroupCoordinator.handleCommitOffsets / handleTxnCommitOffsets / handleFetchOffsets /
handleDeleteOffsets. Contract:
- `OffsetRequests` is mixed into `GroupCoordinator` (coordinator.py), which provides the group-id checks
  (`_validate`: INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), the clock, the rebalance
  timers and the `manager` (metadata_manager.py) that stores, fetches and deletes offsets.
- A commit is checked against the group's membership and generation (a member's commit refreshes its
  session; COMPLETING_REBALANCE answers REBALANCE_IN_PROGRESS; an Empty group takes commits from
  simple consumers with generation -1); each offset's metadata against offset.metadata.max.bytes
  (OFFSET_METADATA_TOO_LARGE). What passes is appended through the manager and each partition answers
  with the append's error. TxnOffsetCommit appends inside the producer's transaction (visible with its
  COMMIT marker), after KIP-890 verification when asked.
- OffsetDelete (KIP-496): an Empty group's offsets; a consumer group's only for topics it is not
  subscribed to (GROUP_SUBSCRIBED_TO_TOPIC); any other group with members: NON_EMPTY_GROUP.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from broker.coordinator.group.config import GroupCoordinatorConfig
from broker.coordinator.group.errors import GroupErrorCode
from broker.coordinator.group.metadata import CONSUMER_PROTOCOL_TYPE, GroupMetadata, GroupState, OffsetAndMetadata
from broker.coordinator.group.metadata_manager import GroupMetadataManager
from broker.coordinator.group.rebalance import Rebalancer
from broker.coordinator.group.results import OffsetCommitEntry, OffsetDeleteResult, OffsetFetchResult
from broker.coordinator.group.schema import fits_int16_string
from storage.values import TopicPartition

E = GroupErrorCode


class OffsetRequests:
    """The offset half of `GroupCoordinator`; the coordinator provides the attributes below."""

    config: GroupCoordinatorConfig
    manager: GroupMetadataManager
    rebalance: Rebalancer
    _validate: Callable[..., int | None]
    _now: Callable[[], int]

    async def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                             generation_id: int, offsets: Sequence[OffsetCommitEntry],
                             retention_time_ms: int = -1, api_version: int = 9) -> dict[TopicPartition, int]:
        """OffsetCommit; the error per partition in request order. Simple consumers (no group
        management) commit with generation_id -1 and member_id "" while the group is Empty.
        `retention_time_ms` (v2-v4) >= 0 sets an expire timestamp; -1 uses offsets.retention.ms.
        A KIP-848 consumer group checks the member id and epoch instead (`generation_id` is the member epoch):
        UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH, and UNSUPPORTED_VERSION below v9 (Kafka 3.9)."""
        tps = [TopicPartition(e.topic, e.partition) for e in offsets]
        error = self._validate(group_id, require_non_empty=False)
        if error is not None:
            return dict.fromkeys(tps, error)
        group = self.manager.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # A commit from an older generation of a group that no longer exists.
                return dict.fromkeys(tps, E.ILLEGAL_GENERATION)
            group = self.manager.add_group(group_id)
        if group.consumer is not None and not group.is_in(GroupState.DEAD):
            error = group.consumer.validate_offset_commit(member_id, generation_id, api_version, False)
        else:
            error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id,
                                                 is_transactional=False)
        if error is not None:
            return dict.fromkeys(tps, error)
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            # The member knows the new generation but has no assignment yet: commit after SyncGroup.
            return dict.fromkeys(tps, E.REBALANCE_IN_PROGRESS)
        member = group.members.get(member_id)
        if member is not None:
            self.rebalance.schedule_heartbeat(group, member)

        results, to_store = self._offsets_to_store(offsets, tps, retention_time_ms)
        if to_store:
            append_error = await self.manager.store_offsets(group, to_store)
            for tp in to_store:
                results[tp] = append_error
        return {tp: results[tp] for tp in tps}

    async def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int, member_id: str,
                                 group_instance_id: str | None, generation_id: int,
                                 offsets: Sequence[OffsetCommitEntry],
                                 verify: Callable[[int], Awaitable[tuple[int, object]]] | None = None,
                                 ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit (Kafka's handleTxnCommitOffsets); the error per partition in request order. The
        offsets are appended in the producer's transaction and become visible with its COMMIT marker.
        KIP-447 (v3+) members are checked like OffsetCommit's; a producer without group metadata
        (generation -1, empty member id: v0-v2) may commit to a group that has members.
        `verify(partition)` (KIP-890) asks the transaction coordinator whether the group's __consumer_offsets
        partition is in the transaction: (error code, verification guard); an error answers every partition."""
        tps = [TopicPartition(e.topic, e.partition) for e in offsets]
        error = self._validate(group_id)
        if error is not None:
            return dict.fromkeys(tps, error)
        group = self.manager.groups.get(group_id)
        if group is None:
            group = self.manager.add_group(group_id)
        verification_guard = None
        if verify is not None:
            error, verification_guard = await verify(group.partition)
            if error != E.NONE:
                return dict.fromkeys(tps, error)
        if group.consumer is not None and not group.is_in(GroupState.DEAD):
            # A KIP-848 consumer group's member (Kafka 3.9): a stale member epoch is ILLEGAL_GENERATION here.
            error = group.consumer.validate_offset_commit(member_id, generation_id, 9, True)
            error = E.ILLEGAL_GENERATION if error == E.STALE_MEMBER_EPOCH else error
        else:
            error = self._validate_offset_commit(group, generation_id, member_id, group_instance_id,
                                                 is_transactional=True)
        if error is not None:
            return dict.fromkeys(tps, error)
        results, to_store = self._offsets_to_store(offsets, tps, -1)
        if to_store:
            append_error = await self.manager.store_txn_offsets(group, producer_id, producer_epoch, to_store,
                                                                verification_guard)
            for tp in to_store:
                results[tp] = append_error
        return {tp: results[tp] for tp in tps}

    def _offsets_to_store(self, offsets: Sequence[OffsetCommitEntry], tps: list[TopicPartition],
                          retention_time_ms: int) -> tuple[dict[TopicPartition, int],
                                                           dict[TopicPartition, OffsetAndMetadata]]:
        """The commits that pass the metadata checks, and the errors of those that do not."""
        now = self._now()
        expire = now + retention_time_ms if retention_time_ms >= 0 else -1
        results: dict[TopicPartition, int] = {}
        to_store: dict[TopicPartition, OffsetAndMetadata] = {}
        for entry, tp in zip(offsets, tps, strict=True):
            metadata = entry.metadata or ""
            if (len(metadata.encode("utf-8")) > self.config.offset_metadata_max_bytes
                    or not fits_int16_string(metadata)):
                results[tp] = E.OFFSET_METADATA_TOO_LARGE
                continue
            if not fits_int16_string(tp.topic):
                results[tp] = E.INVALID_REQUEST
                continue
            to_store[tp] = OffsetAndMetadata(entry.offset, entry.leader_epoch, metadata, now, expire)
        return results, to_store

    @staticmethod
    def _validate_offset_commit(group: GroupMetadata, generation_id: int, member_id: str,
                                group_instance_id: str | None, *, is_transactional: bool) -> int | None:
        if group.is_in(GroupState.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_in(GroupState.EMPTY):
            # The admin client or a consumer without group management: an Empty group takes its commits.
            return None
        if generation_id >= 0 or member_id != "" or group_instance_id is not None:
            if group.is_static_member_fenced(group_instance_id, member_id):
                return E.FENCED_INSTANCE_ID
            if not group.has(member_id):
                return E.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return E.ILLEGAL_GENERATION
            return None
        if not is_transactional and not group.is_in(GroupState.EMPTY):
            # Only members may commit to a group that has members; transactional commits of v0-v2
            # carry no member id and are exempt.
            return E.UNKNOWN_MEMBER_ID
        return None

    async def fetch_offsets(self, group_id: str, partitions: Sequence[tuple[str, int]] | None,
                            require_stable: bool = False, member_id: str | None = None,
                            member_epoch: int = -1) -> OffsetFetchResult:
        """OffsetFetch for one group: the given partitions (offset -1 when none is committed), or all
        committed partitions when `partitions` is None. With `require_stable` (v7+) a partition with a
        pending transactional commit answers UNSTABLE_OFFSET_COMMIT. A KIP-848 consumer group checks the
        member id and epoch given (v9+): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH (Kafka 3.9)."""
        error = self._validate(group_id, require_non_empty=False)
        if error is not None:
            return OffsetFetchResult(error)
        group = self.manager.groups.get(group_id)
        if group is not None and group.consumer is not None and not group.is_in(GroupState.DEAD):
            error = group.consumer.validate_offset_fetch(member_id, member_epoch)
            if error is not None:
                return OffsetFetchResult(error)
        return self.manager.fetch_offsets(group_id, partitions, require_stable)

    async def delete_offsets(self, group_id: str,
                             partitions: Sequence[tuple[str, int]]) -> OffsetDeleteResult:
        """OffsetDelete (KIP-496): an Empty group loses any offsets; a consumer group with members
        only those of topics it is not subscribed to (GROUP_SUBSCRIBED_TO_TOPIC otherwise)."""
        error = self._validate(group_id)
        if error is not None:
            return OffsetDeleteResult(error)
        group = self.manager.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return OffsetDeleteResult(E.GROUP_ID_NOT_FOUND)
        tps = [TopicPartition(t, p) for t, p in partitions]
        results: dict[TopicPartition, int] = {}
        if group.is_in(GroupState.EMPTY) and not group.has_consumer_members:
            eligible = tps
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE or group.consumer is not None:
            subscribed = group.consumer.is_subscribed_to_topic if group.consumer is not None \
                else group.is_subscribed_to_topic
            eligible = []
            for tp in tps:
                if subscribed(tp.topic):
                    results[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return OffsetDeleteResult(E.NON_EMPTY_GROUP)
        removable = [tp for tp in eligible if tp in group.offsets]
        append_error = await self.manager.delete_offsets(group, removable) if removable else E.NONE
        for tp in eligible:
            results[tp] = append_error
        return OffsetDeleteResult(E.NONE, {tp: results[tp] for tp in tps})
