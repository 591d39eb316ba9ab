"""Byte compatibility: kafka-python's encoder in, kafka-python's reader over our raw files out; index,
time index and producer snapshot files match Kafka's formats field by field."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from kafka.record.memory_records import MemoryRecords

from records import batch_headers as iter_batches
from storage import Log, LogConfig

from .conftest import build_batch

NOW = 1_700_000_000_000
CFG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=1024, segment_index_bytes=8192)


@pytest.mark.parametrize("compression", [0, 1])  # none, gzip (always available to kafka-python)
def test_raw_log_files_read_by_kafka_python(tmp_path: Path, compression: int) -> None:
    lg = Log.open(tmp_path / "compat-0", CFG)
    expected = []
    for i in range(60):
        b = build_batch(
            1 + i % 5, value_size=200, seed=i, timestamp=NOW + i, compression=compression, compressible=True
        )
        reference = [(r.timestamp, bytes(r.key), bytes(r.value)) for r in MemoryRecords(bytes(b)).next_batch()]
        expected += reference
        lg.append_as_leader(b, 9, now_ms=NOW)
    lg.close()
    seen = []
    next_offset = 0
    for path in sorted((tmp_path / "compat-0").glob("*.log")):
        assert int(path.name[:20]) == next_offset  # file named by the base offset of its first batch
        records = MemoryRecords(path.read_bytes())
        while (batch := records.next_batch()) is not None:
            assert batch.validate_crc()
            assert batch.base_offset == next_offset and batch.leader_epoch == 9
            assert batch.compression_type == compression
            for r in batch:
                assert r.offset == next_offset
                next_offset += 1
                seen.append((r.timestamp, bytes(r.key), bytes(r.value)))
        assert records.valid_bytes() == path.stat().st_size  # no trailing garbage
    assert seen == expected


def test_index_and_time_index_fields(tmp_path: Path) -> None:
    lg = Log.open(tmp_path / "idx-0", CFG)
    for i in range(200):
        lg.append_as_leader(build_batch(2, value_size=150, seed=i, timestamp=NOW + i * 10), 0, now_ms=NOW)
    lg.close()
    d = tmp_path / "idx-0"
    for log_path in sorted(d.glob("*.log")):
        base = int(log_path.name[:20])
        data = log_path.read_bytes()
        batches = {pos: h for pos, h in iter_batches(data)}
        index = (d / f"{base:020d}.index").read_bytes()
        assert len(index) % 8 == 0 and len(index) > 0
        prev = -1
        for rel, pos in struct.iter_unpack(">ii", index):
            assert rel > prev
            prev = rel
            assert pos in batches and batches[pos].last_offset == base + rel  # offset -> batch position
        timeindex = (d / f"{base:020d}.timeindex").read_bytes()
        assert len(timeindex) % 12 == 0
        prev_ts = -1
        for ts, rel in struct.iter_unpack(">qi", timeindex):
            assert ts > prev_ts
            prev_ts = ts
            owner = [h for h in batches.values() if h.last_offset == base + rel]
            assert owner and owner[0].max_timestamp == ts
        # the last time index entry holds the segment's max timestamp (written when the segment rolled)
        assert prev_ts == max(h.max_timestamp for h in batches.values())


def test_producer_snapshot_is_kafkas_format(tmp_path: Path) -> None:
    lg = Log.open(tmp_path / "snap-0", CFG)
    lg.append_as_leader(
        build_batch(3, producer_id=4242, producer_epoch=2, base_sequence=0, timestamp=NOW), 0, now_ms=NOW
    )
    lg.append_as_leader(
        build_batch(2, producer_id=4242, producer_epoch=2, base_sequence=3, timestamp=NOW + 5), 0, now_ms=NOW
    )
    lg.close()
    raw = (tmp_path / "snap-0" / "00000000000000000005.snapshot").read_bytes()
    version, crc, count = struct.unpack_from(">hIi", raw)
    assert (version, count) == (1, 1)
    assert crc == crc32c.crc32c(raw[6:])
    pid, epoch, last_seq, last_offset, offset_delta, ts, coord_epoch, txn_first = struct.unpack_from(
        ">qhiqiqiq", raw, 10
    )
    assert (pid, epoch, last_seq, last_offset, offset_delta) == (4242, 2, 4, 4, 1)
    assert ts == NOW + 5 + 1 and coord_epoch == -1 and txn_first == -1
    assert len(raw) == 10 + 46


def test_follower_ignores_partial_trailing_batch(tmp_path: Path) -> None:
    leader = Log.open(tmp_path / "l" / "p-0", CFG)
    for i in range(5):
        leader.append_as_leader(build_batch(2, seed=i), 1, now_ms=NOW)
    data = leader.read(0, 1 << 20).records.read()
    cut = iter_batches(data)[3][0] + 20
    follower = Log.open(tmp_path / "f" / "p-0", CFG)
    info = follower.append_as_follower(memoryview(data)[:cut])
    assert (info.first_offset, info.last_offset, follower.log_end_offset) == (0, 5, 6)
    assert follower.append_as_follower(memoryview(data)[iter_batches(data)[3][0] : cut]).records_count == 0
    follower.append_as_follower(memoryview(data)[iter_batches(data)[3][0] :])
    assert follower.read(0, 1 << 20).records.read() == data


def test_unreadable_epoch_checkpoint_does_not_block_open(tmp_path: Path) -> None:
    lg = Log.open(tmp_path / "e-0", CFG)
    lg.append_as_leader(build_batch(2), 4, now_ms=NOW)
    lg.close()
    (tmp_path / "e-0" / "leader-epoch-checkpoint").write_text("garbage\n")
    (tmp_path / "e-0" / "partition.metadata").write_text("nonsense")
    lg = Log.open(tmp_path / "e-0", CFG, had_clean_shutdown=True)
    assert lg.log_end_offset == 2 and lg.leader_epoch_cache.entries() == []
    lg.append_as_leader(build_batch(1), 5, now_ms=NOW)
    assert lg.leader_epoch_cache.entries() == [(5, 2)]
