"""Replaying one `__consumer_offsets` partition into groups and offsets while it loads (the record half of
Kafka's GroupMetadataManager.doLoadGroupsAndOffsets); the manager builds the groups from the result.

Contract: a `PartitionLoad` is fed the partition's records in log order, chunk by chunk: `replay(records)` for
bare (key, value) pairs, `replay_batches(batches)` for whole batches with their markers (`LoadedBatch`). Plain
offset commits are committed at once; a transactional batch's offset commits wait under their producer id
until a COMMIT marker makes them committed (the later batch wins, by batch offset) or an ABORT drops them;
those still waiting at the end are `pending`. Group metadata records (and tombstones) apply as they come; KIP-848
consumer groups' records go to `consumer` (consumer_records.ConsumerGroupReplay), KIP-932 share groups' to `share`
(share_records.ShareGroupReplay).
Undecodable records are counted in `skipped`, with one warning. No I/O.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from broker.coordinator.group.consumer_records import ConsumerGroupReplay, decode_consumer_key
from broker.coordinator.group.metadata import OffsetAndMetadata
from broker.coordinator.group.schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    SchemaError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from broker.coordinator.group.share_records import ShareGroupReplay, decode_share_key
from broker.coordinator.runtime import LoadedBatch, Record
from storage.values import TopicPartition

log = logging.getLogger("broker.coordinator.group.metadata_manager")

GroupTopicPartition = tuple[str, str, int]
Appended = tuple[int, OffsetCommitValue]  # (the commit's batch offset, the value)
COMMIT = 1  # ControlRecordType.COMMIT


class PartitionLoad:
    __slots__ = ("partition", "offsets", "pending", "groups", "removed_groups", "skipped", "consumer", "share")

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.offsets: dict[GroupTopicPartition, Appended] = {}
        self.pending: dict[int, dict[GroupTopicPartition, Appended]] = {}  # producer id -> its open commits
        self.groups: dict[str, GroupMetadataValue] = {}
        self.removed_groups: set[str] = set()
        self.skipped = 0
        self.consumer = ConsumerGroupReplay()  # KIP-848 consumer groups' records
        self.share = ShareGroupReplay()  # KIP-932 share groups' records

    def replay_batches(self, batches: Iterable[LoadedBatch]) -> None:
        for batch in batches:
            if batch.control_type is None:
                self.replay(batch.records, batch.base_offset, batch.producer_id if batch.is_transactional else None)
                continue
            pending = self.pending.pop(batch.producer_id, None)
            if batch.control_type == COMMIT and pending:
                for key, appended in pending.items():
                    current = self.offsets.get(key)
                    if current is None or current[0] < appended[0]:
                        self.offsets[key] = appended

    def replay(self, records: Iterable[Record], batch_offset: int = -1, producer_id: int | None = None) -> None:
        for raw_key, raw_value in records:
            try:
                key = decode_key(raw_key)
                if isinstance(key, OffsetCommitKey):
                    tp_key = (key.group, key.topic, key.partition)
                    offsets = self.offsets if producer_id is None else self.pending.setdefault(producer_id, {})
                    if raw_value is None:
                        offsets.pop(tp_key, None)
                    else:
                        offsets[tp_key] = (batch_offset, decode_offset_commit_value(raw_value))
                elif isinstance(key, GroupMetadataKey):
                    if raw_value is None:
                        self.groups.pop(key.group, None)
                        self.removed_groups.add(key.group)
                    else:
                        self.groups[key.group] = decode_group_metadata_value(raw_value)
                        self.removed_groups.discard(key.group)
                elif (consumer_key := decode_consumer_key(raw_key)) is not None:
                    self.consumer.replay(consumer_key, raw_value)
                elif (share_key := decode_share_key(raw_key)) is not None:
                    self.share.replay(share_key, raw_value)
            except SchemaError as exc:
                self.skipped += 1
                if self.skipped == 1:
                    log.warning("__consumer_offsets-%d: skipping undecodable record: %s", self.partition, exc)

    def committed_by_group(self) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        out: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for (group_id, topic, partition), appended in self.offsets.items():
            out.setdefault(group_id, {})[TopicPartition(topic, partition)] = _offset(appended)
        return out

    def pending_by_group(self) -> dict[str, dict[int, dict[TopicPartition, OffsetAndMetadata]]]:
        out: dict[str, dict[int, dict[TopicPartition, OffsetAndMetadata]]] = {}
        for producer_id, producer_offsets in self.pending.items():
            for (group_id, topic, partition), appended in producer_offsets.items():
                out.setdefault(group_id, {}).setdefault(producer_id, {})[TopicPartition(topic, partition)] = \
                    _offset(appended)
        return out


def _offset(appended: Appended) -> OffsetAndMetadata:
    batch_offset, v = appended
    return OffsetAndMetadata(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp,
                             record_offset=batch_offset)
