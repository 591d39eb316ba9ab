"""AlterShareGroupOffsets and DeleteShareGroupOffsets in the group coordinator (KIP-932, Kafka 4.2-4.4's
GroupMetadataManager rules), on the share-partition state recorded in ShareGroupStatePartitionMetadata
(share_state_metadata.py) and kept by the share coordinator (through the persister).

Contract:
- Both need a group id (INVALID_GROUP_ID for an empty one, as Kafka 4.2+), this coordinator (its errors), a group
  that is not a classic or consumer group (GROUP_ID_NOT_FOUND, "Group X is not a share group.") and no members
  (NON_EMPTY_GROUP).
- `alter_share_group_offsets(coordinator, group_id, topics)`: per partition UNKNOWN_TOPIC_OR_PARTITION for an
  unknown topic or partition; the others enter `initializing`, are initialized through the persister with
  their new start offset (state epoch: the group epoch, or one above the stored one when that is not below it,
  so a share-partition leader still holding the old state is fenced on its next write) and move to
  `initialized`; a persister failure is that partition's error (COORDINATOR_NOT_AVAILABLE / UNKNOWN_SERVER_ERROR
  as Kafka's SharePartition maps them). A share group that does not exist yet is created empty, at group and
  assignment epoch 1 as Kafka 4.4 shows it, with these records: an admin sets a group's start offsets before
  any consumer joins. Nothing to initialize (every topic
  unknown) creates nothing.
- `delete_share_group_offsets(coordinator, group_id, names)`: GROUP_ID_NOT_FOUND for a group that does not exist;
  per topic UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or one without state (no topic id, as Kafka); the
  others leave `initialized` for `deleting`, their partitions' state is deleted through the persister, and they
  leave `deleting` (a failure leaves them there, to be deleted again by the next request or DeleteGroups).
Results are (top-level error, message, per-topic results); the caller drops what this broker's share-partition
leaders hold for the changed partitions.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from broker.coordinator.group import share_records
from broker.coordinator.group import share_state_metadata as state_md
from broker.coordinator.group.errors import GroupErrorCode as E
from broker.coordinator.group.metadata import GroupState
from broker.coordinator.group.share_group import ShareGroup
from broker.coordinator.share.persister import PersisterError, persister_error_code

log = logging.getLogger(__name__)

PartitionResult = tuple[int, int, str | None]  # partition, error, message
AlterTopicResult = tuple[str, uuid.UUID | None, list[PartitionResult]]
DeleteTopicResult = tuple[str, uuid.UUID | None, int, str | None]


_UNKNOWN_TOPIC = "This server does not host this topic-partition."


def _empty_group(coordinator: Any, group_id: str, *, create: bool) -> tuple[int, str | None, ShareGroup | None]:
    """The empty share group `group_id`, or why not. `create`: a missing group is a new one, not yet
    registered (the caller registers it once it has records to write, as Kafka creates it on their replay)."""
    if not group_id:
        return E.INVALID_GROUP_ID, "The group id is invalid.", None
    if coordinator.manager.shutting_down:
        return E.COORDINATOR_NOT_AVAILABLE, None, None
    error = coordinator.manager.partition_error(group_id)
    if error is not None:
        return error, None, None
    group = coordinator.share_groups.get(group_id)
    if group is None:
        entry = coordinator.manager.groups.get(group_id)
        if entry is not None and not entry.is_in(GroupState.DEAD):
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", None
        if not create:
            return E.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return E.NONE, None, ShareGroup(group_id)
    if group.members:
        return E.NON_EMPTY_GROUP, "The group is not empty.", None
    return E.NONE, None, group


async def _store(coordinator: Any, group: ShareGroup, records: list[Any] | None = None) -> int:
    record = state_md.state_partition_metadata_record(group.group_id, group.state_metadata)
    return int(await coordinator.manager.append_group_records(coordinator.manager.partition_for(group.group_id),
                                                              [*(records or []), record]))


async def alter_share_group_offsets(coordinator: Any, group_id: str, topics: list[tuple[str, list[tuple[int, int]]]]
                                    ) -> tuple[int, str | None, list[AlterTopicResult]]:
    error, message, group = _empty_group(coordinator, group_id, create=True)
    if group is None:
        return error, message, []
    results: list[AlterTopicResult] = []
    wanted: dict[uuid.UUID, state_md.InitValue] = {}
    offsets: dict[tuple[uuid.UUID, int], int] = {}
    now = int(time.time() * 1000)
    for name, partitions in topics:
        found = coordinator.topics_image.topic(name)
        if found is None:
            results.append((name, None, [(p, E.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC) for p, _ in partitions]))
            continue
        tid, count = found
        rows = []
        for p, start in partitions:
            if 0 <= p < count:
                rows.append((p, E.NONE, None))
                offsets[(tid, p)] = start
            else:
                rows.append((p, E.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC))
        results.append((name, tid, rows))
        ok = frozenset(p for p, code, _ in rows if code == E.NONE)
        if ok:
            wanted[tid] = state_md.InitValue(name, ok, now)
    if not wanted:
        return E.NONE, None, results
    created = group_id not in coordinator.share_groups
    records = []
    if created:
        # Kafka 4.4 shows a share group made this way at group and assignment epoch 1 (as a group whose only
        # member left); a first member then joins at epoch 2.
        group.group_epoch = group.assignment_epoch = 1
        records = [share_records.group_epoch_record(group_id, 1), share_records.target_epoch_record(group_id, 1)]
        coordinator.share_groups[group_id] = group
        log.info("share group %s: created empty by AlterShareGroupOffsets", group_id)
    md = group.state_metadata.copy()
    md.initializing = state_md.combine(md.initializing, wanted)
    for tid in wanted:
        md.deleting.pop(tid, None)
    group.state_metadata = md
    error = await _store(coordinator, group, records)
    if error != E.NONE:
        if created and coordinator.share_groups.get(group_id) is group:
            del coordinator.share_groups[group_id]  # its record is not written: the group does not exist
        return error, None, []
    persister = coordinator.share_persister()
    failed: dict[tuple[uuid.UUID, int], tuple[int, str]] = {}
    for (tid, p), start in offsets.items():
        try:
            stored = await persister.read_summary(group_id, tid.bytes, p, -1)
            epoch = max(group.group_epoch, stored.state_epoch + 1)
            await persister.initialize(group_id, tid.bytes, p, epoch, start)
        except PersisterError as e:
            failed[(tid, p)] = (persister_error_code(e.error_code), str(e))
    done = {tid: frozenset(p for p in v.partitions if (tid, p) not in failed) for tid, v in wanted.items()}
    md = group.state_metadata.copy()
    md.initializing = state_md.remove(md.initializing, {tid: v.partitions for tid, v in wanted.items()})
    md.initialized = state_md.combine(md.initialized, {
        tid: state_md.InitValue(wanted[tid].name, ps, now) for tid, ps in done.items() if ps})
    group.state_metadata = md
    error = await _store(coordinator, group)
    if error != E.NONE:
        return error, None, []
    results = [(name, tid, [(p, *failed[(tid, p)]) if tid is not None and (tid, p) in failed else (p, code, msg)
                            for p, code, msg in rows]) for name, tid, rows in results]
    return E.NONE, None, results


async def delete_share_group_offsets(coordinator: Any, group_id: str, names: list[str]
                                     ) -> tuple[int, str | None, list[DeleteTopicResult]]:
    error, message, group = _empty_group(coordinator, group_id, create=False)
    if group is None:
        return error, message, []
    results: list[DeleteTopicResult] = []
    md = group.state_metadata.copy()
    to_delete: dict[uuid.UUID, state_md.InitValue] = {}
    for name in names:
        found = coordinator.topics_image.topic(name)
        if found is None:
            results.append((name, None, E.UNKNOWN_TOPIC_OR_PARTITION, _UNKNOWN_TOPIC))
            continue
        tid, count = found
        if tid in md.initialized:
            to_delete[tid] = md.initialized.pop(tid)
            md.deleting[tid] = name
        elif tid in md.deleting:
            to_delete[tid] = state_md.InitValue(name, frozenset(range(count)), 0)
        else:
            # Kafka answers this one without the topic id too.
            results.append((name, None, E.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete."))
    if not to_delete:
        return E.NONE, None, results
    group.state_metadata = md
    error = await _store(coordinator, group)
    if error != E.NONE:
        return error, None, []
    errors = await coordinator.delete_share_partition_state(group_id, to_delete)
    md = group.state_metadata.copy()
    for tid, code in errors.items():
        if code == E.NONE:
            md.deleting.pop(tid, None)
        results.append((to_delete[tid].name, tid, code if code == E.NONE else persister_error_code(code), None))
    group.state_metadata = md
    error = await _store(coordinator, group)
    if error != E.NONE:
        return error, None, []
    return E.NONE, None, results
