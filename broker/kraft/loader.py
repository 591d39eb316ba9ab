"""From committed metadata log records to published images, with metadata transactions applied atomically.

Contract (Kafka's MetadataBatchLoader and MetadataLoader, 3.9; KIP-868 transactions):
- `load_batch(...)` (or `load_metadata_batch(batch)`) replays the records of one committed batch (up to
  the quorum's high watermark: the caller's business) onto the pending delta; `flush()` publishes it: the
  next image is built, `image` moves to it and `on_publish(delta, image)` is called (the caller takes
  `delta.local_changes(node_id)` from there). The image's provenance is the offset and epoch of the last
  record loaded and the batch's append time.
- BeginTransactionRecord first publishes what was loaded before it (so a transaction starts a delta of its
  own); records up to EndTransactionRecord join that delta and nothing is published while the transaction
  is open, even across `flush()` calls. AbortTransactionRecord discards every record since the Begin: the
  next publication carries the image as it was, with the provenance moved past the abort. A Begin inside
  a transaction, or an End/Abort outside one, is a fault.
- `load_snapshot(...)` replays a whole snapshot onto a fresh delta of the current image, removes
  what it does not mention (`finish_snapshot`) and publishes at once; an open transaction is dropped.
- `kraft_version`: the quorum's kraft.version as the last KRaftVersion control record (in a batch or a
  snapshot's header batch) set it; 0 before any, as Kafka's KRaftControlRecordStateMachine starts.
- A record that cannot be applied (MetadataReplayError, an invalid value) goes to `fault_handler` with its
  offset and is skipped, as Kafka's loader reports a fault and carries on; the default handler logs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from broker.kraft.delta import MetadataDelta
from broker.kraft.image import EMPTY_IMAGE, MetadataImage, MetadataProvenance
from protocol.metadata_records import KRaftControlRecordType, MetadataBatch
from protocol.metadata_records import MetadataRecordType as T

log = logging.getLogger(__name__)

PublishCallback = Callable[[MetadataDelta, MetadataImage], None]
FaultHandler = Callable[[str, BaseException], None]


def _log_fault(message: str, error: BaseException) -> None:
    log.error('%s: %s', message, error)


class MetadataLoader:
    def __init__(
        self,
        image: MetadataImage = EMPTY_IMAGE,
        on_publish: PublishCallback | None = None,
        fault_handler: FaultHandler = _log_fault,
    ) -> None:
        self.on_publish = on_publish
        self.fault_handler = fault_handler
        self.kraft_version = 0
        self._reset(image)

    def _reset(self, image: MetadataImage) -> None:
        self.image = image
        self.delta = MetadataDelta(image)
        self.in_transaction = False
        self._has_records = False
        self._last_offset = image.provenance.last_contained_offset
        self._last_epoch = image.provenance.last_contained_epoch
        self._last_time_ms = image.provenance.last_contained_log_time_ms

    def _provenance(self) -> MetadataProvenance:
        return MetadataProvenance(self._last_offset, self._last_epoch, self._last_time_ms)

    def _publish(self, delta: MetadataDelta) -> MetadataImage:
        try:
            image = delta.apply(self._provenance())
        except Exception as e:  # noqa: BLE001 - reported like a replay fault; the old image stays
            self.fault_handler(f'error building the metadata image at offset {self._last_offset}', e)
            image = self.image
        if self.on_publish is not None:
            self.on_publish(delta, image)
        self._reset(image)
        return image

    @property
    def has_pending(self) -> bool:
        """Whether records were loaded since the last publication."""
        return self._last_offset != self.image.provenance.last_contained_offset

    def load_batch(self, base_offset: int, epoch: int, append_time_ms: int, records: Iterable[Any],
                   last_offset: int | None = None) -> None:
        """The metadata records (decoded messages, in offset order) of one data batch; `last_offset`, the
        batch's, is where the image's offset moves to when given (a control batch has no records to load
        but still moves it, as in Kafka)."""
        self._last_epoch = epoch
        self._last_time_ms = append_time_ms
        for index, message in enumerate(records):
            offset = base_offset + index
            try:
                self._replay(message)
            except Exception as e:  # noqa: BLE001 - a bad record is a fault to report, not a crash
                self.fault_handler(f'error loading metadata log record at offset {offset}', e)
            self._last_offset = offset
        if last_offset is not None:
            self._last_offset = last_offset

    def load_metadata_batch(self, batch: MetadataBatch) -> None:
        """A decoded batch of the metadata log (`protocol.metadata_records.decode_metadata_batches`)."""
        self.load_control_records(batch.control_records)
        self.load_batch(batch.base_offset, batch.epoch, batch.append_timestamp,
                        [r.message for r in batch.records], batch.last_offset)

    def load_control_records(self, control_records: Iterable[tuple[int, Any]]) -> None:
        for control_type, message in control_records:
            if control_type == KRaftControlRecordType.KRAFT_VERSION:
                self.kraft_version = message.k_raft_version

    def _replay(self, message: Any) -> None:
        rtype = getattr(type(message), 'record_type', -1)
        if rtype == T.BEGIN_TRANSACTION_RECORD:
            if self.in_transaction:
                raise ValueError('BeginTransactionRecord while already in a transaction')
            if self._has_records:
                self._publish(self.delta)
            self.in_transaction = True
        elif rtype == T.END_TRANSACTION_RECORD:
            if not self.in_transaction:
                raise ValueError('EndTransactionRecord without a BeginTransactionRecord')
            self.in_transaction = False
        elif rtype == T.ABORT_TRANSACTION_RECORD:
            if not self.in_transaction:
                raise ValueError('AbortTransactionRecord without a BeginTransactionRecord')
            self.delta = MetadataDelta(self.image)
            self._has_records = False
            self.in_transaction = False
        else:
            self._has_records = True
            self.delta.replay(message)

    def flush(self) -> MetadataImage | None:
        """Publish what was loaded, unless a transaction is open; returns the new image, or None."""
        if self.in_transaction or not self.has_pending:
            return None
        return self._publish(self.delta)

    def load_snapshot(self, end_offset: int, epoch: int, last_contained_log_time_ms: int,
                      records: Iterable[Any]) -> MetadataImage:
        """Replace the image by a snapshot's (records = its metadata records, decoded)."""
        delta = MetadataDelta(self.image)
        for index, message in enumerate(records):
            try:
                delta.replay(message)
            except Exception as e:  # noqa: BLE001
                self.fault_handler(f'error loading metadata snapshot record {index}', e)
        delta.finish_snapshot()
        self._last_offset = end_offset - 1
        self._last_epoch = epoch
        self._last_time_ms = last_contained_log_time_ms
        return self._publish(delta)
