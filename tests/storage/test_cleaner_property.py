"""Property: for any history of puts, tombstones and rolls, one clean keeps exactly the latest record per key
in the cleaned range (minus expired tombstones), leaves everything after it alone, and keeps offsets."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records import Record, iter_batches
from storage.cleaner import LogCleaner
from storage.config import LogConfig
from storage.log import Log

from .conftest import encode_batch

DAY_MS = 86_400_000

put = st.tuples(st.integers(0, 5), st.one_of(st.none(), st.binary(min_size=0, max_size=20)))
batch_of_puts = st.lists(put, min_size=1, max_size=4)
history = st.lists(st.one_of(batch_of_puts, st.just("roll")), min_size=1, max_size=25)


def read_all(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        info = log.read(offset, 1 << 30)
        if info.records is None:
            break
        for batch in iter_batches(info.records.read()):
            out.extend((r.offset, r.key, r.value) for r in batch.records() if r.offset >= offset)
            offset = batch.last_offset + 1
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history, st.integers(0, 4), st.booleans())
def test_one_clean_keeps_latest_per_key(ops: list, codec: int, expire_tombstones: bool) -> None:
    now = int(time.time() * 1000)
    config = LogConfig(cleanup_policy="compact", min_cleanable_dirty_ratio=0.0, segment_index_bytes=4096,
                       index_interval_bytes=64)
    with tempfile.TemporaryDirectory() as tmp:
        log = Log.open(Path(tmp) / "t-0", config, now_ms=now)
        for op in ops + ["roll"]:
            if op == "roll":
                log.roll()
                continue
            # A producer's batch: offsets from 0; the log assigns them.
            records = [Record(i, now + i, b"key-%d" % k, v) for i, (k, v) in enumerate(op)]
            log.append_as_leader(bytearray(encode_batch(records, base_offset=0, compression=codec)), 0, now_ms=now)
        before = read_all(log)
        end = log.active_segment.base_offset
        clean_at = now + DAY_MS + 60_000 if expire_tombstones else now
        stats = LogCleaner().clean(log, clean_at)
        after = read_all(log)
        if not before:
            assert not stats.cleaned
            return
        assert stats.cleaned and stats.end_offset == end
        latest: dict[bytes | None, int] = {}
        for off, k, _v in before:
            if off < end:
                latest[k] = off
        expected = [
            (off, k, v) for off, k, v in before
            if off >= end or (latest[k] == off and not (expire_tombstones and v is None))
        ]
        assert after == expected
        assert log.log_end_offset == (before[-1][0] + 1)
        log.close()
