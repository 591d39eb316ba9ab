"""Kafka's LogValidator (with UnifiedLog.analyzeAndValidateRecords) for one leader append: check once, assign
offsets in place.

Contract: ``validate_and_assign_offsets(buf, tp, config, ...)`` is the only validation a leader append gets.
It runs, in Kafka's order, over a writable buffer of v2 batches (the broker up-converts v0/v1 first):

- the header-level checks of ``records.validate_batches`` (one header parse and one CRC32C per batch):
  no batches at all and a wrong magic (INVALID_RECORD), damaged bytes or CRC (``CorruptRecordError``,
  CORRUPT_MESSAGE), a batch over ``max.message.bytes`` (``RecordTooLargeError``, MESSAGE_TOO_LARGE) and, for
  ``AppendOrigin.CLIENT``, Kafka's client rules (base offset 0, count equal to the offset range, no control
  batches, a sequence with a producer id, one batch per request);
- on compacted topics, a key on every record: the only case that decodes records. Keyless records give
  ``InvalidRecordError`` with Kafka's message and KIP-467 ``record_errors`` (index of the record in its batch,
  "Compacted topic cannot accept message without key in topic partition <tp>.");
- the whole append against ``segment.bytes`` (``RecordBatchTooLargeError``, RECORD_LIST_TOO_LARGE);
- then offsets from ``first_offset`` and the partition leader epoch are written into the batches (outside
  the CRC) and, with ``log_append_time``, the LogAppendTime attribute and max timestamp with one CRC
  computation per batch (none when a batch already carries them).

Nothing is written before every check has passed. Records are otherwise not decoded: a compressed client
batch is stored as sent (Kafka recompresses when its inner offsets are not 0..n-1; we do not).
"""

from __future__ import annotations

from enum import Enum

from records import LOG_OVERHEAD, BatchHeader, RecordBatch, assign_batch_offsets, validate_batches
from records import CorruptRecordError as CodecCorruptRecordError
from records import InvalidRecordError as CodecInvalidRecordError
from records import RecordTooLargeError as CodecRecordTooLargeError
from storage.config import LogConfig
from storage.errors import CorruptRecordError, InvalidRecordError, RecordBatchTooLargeError, RecordTooLargeError
from storage.values import TopicPartition

__all__ = ["AppendOrigin", "validate_and_assign_offsets"]


class AppendOrigin(Enum):
    """Who wrote an append (Kafka's AppendOrigin). Only a client's batches get the client rules here (no
    control batches, base offset 0, ...); the producer state checks clients fully, the coordinator's writes
    (group metadata, transaction markers) by epochs only, and replication (follower appends, recovery) not
    at all."""

    CLIENT = "client"  # a producer's Produce request
    COORDINATOR = "coordinator"  # the broker's own writes: group metadata, transaction markers
    REPLICATION = "replication"  # batches already written by a leader: follower appends and recovery


def validate_and_assign_offsets(
    buf: bytearray | memoryview,
    topic_partition: TopicPartition,
    config: LogConfig,
    *,
    first_offset: int,
    leader_epoch: int,
    origin: AppendOrigin = AppendOrigin.CLIENT,
    log_append_time: int | None = None,
) -> list[tuple[int, BatchHeader]]:
    """Check the batches in ``buf`` (see the module contract), then assign offsets in place; returns the
    position and header of every batch as now written."""
    tp = topic_partition
    try:
        summary = validate_batches(buf, max_batch_size=config.max_message_bytes,
                                   from_client=origin is AppendOrigin.CLIENT)
        if config.compact:
            _check_keys(tp, buf, summary.batches)
    except CodecRecordTooLargeError as e:
        raise RecordTooLargeError(f"{e} (max.message.bytes) in topic partition {tp}") from None
    except CodecInvalidRecordError as e:
        raise InvalidRecordError(f"{e} in topic partition {tp}") from None
    except CodecCorruptRecordError as e:
        raise CorruptRecordError(f"{e} in topic partition {tp}") from None
    if summary.size_in_bytes > config.segment_bytes:
        raise RecordBatchTooLargeError(
            f"Message batch size is {summary.size_in_bytes} bytes in append to partition {tp}, which exceeds "
            f"the maximum configured segment size of {config.segment_bytes}."
        )
    assign_batch_offsets(buf, summary.batches, first_offset, leader_epoch, log_append_time)
    return [(pos, BatchHeader.unpack_from(buf, pos)) for pos, _h in summary.batches]


def _check_keys(tp: TopicPartition, buf: bytearray | memoryview, batches: list[tuple[int, tuple]]) -> None:
    """Kafka's validateKey for compacted topics, record by record; the first batch with keyless records
    fails the append with every such record listed (KIP-467)."""
    view = memoryview(buf)
    for pos, h in batches:
        batch = RecordBatch(view[pos:pos + h[1] + LOG_OVERHEAD])
        message = f"Compacted topic cannot accept message without key in topic partition {tp}."
        errors: list[tuple[int, str | None]] = [
            (index, message) for index, record in enumerate(batch.records()) if record.key is None
        ]
        if errors:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
            raise InvalidRecordError(
                f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
                f"showing the first three errors at most: [{shown}]",
                errors,
            )
