"""Shared fixtures for storage tests: record batches built by kafka-python's stock encoder."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka.record.memory_records import MemoryRecordsBuilder

from records import Record, TimestampType
from records import build_batch as build_records_batch
from storage import LogConfig


def build_batch(
    n: int = 1,
    *,
    value_size: int = 10,
    timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = 0,
    key: bytes | None = b"k",
    seed: int = 0,
    compressible: bool = False,
) -> bytearray:
    """One v2 batch of ``n`` records (offsets 0..n-1, as a producer sends them)."""
    builder = MemoryRecordsBuilder(
        2,
        compression,
        batch_size=1 << 30,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    for i in range(n):
        if compressible:
            value = (b"value-%d-%d " % (seed, i) * value_size)[:value_size]
        else:
            value = bytes((seed + i + j) % 251 for j in range(value_size))
        if builder.append(ts + i, key, value) is None:
            raise RuntimeError("batch full")
    builder.close()
    return bytearray(builder.buffer())


def encode_batch(records: list[Record], *, base_offset: int, log_append_time: int | None = None, **kw) -> bytes:
    """One batch holding ``records`` at their own offsets, through the shared codec's builder."""
    if log_append_time is not None:
        kw.update(timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=log_append_time)
    return build_records_batch([(r.key, r.value, r.headers, r.timestamp) for r in records],
                               base_offset=base_offset, offset_deltas=[r.offset - base_offset for r in records], **kw)


@pytest.fixture
def batch() -> Callable[..., bytearray]:
    return build_batch


@pytest.fixture
def small_config() -> LogConfig:
    return LogConfig(segment_bytes=4096, index_interval_bytes=256, segment_index_bytes=4096)
