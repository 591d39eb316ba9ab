"""``python -m storage.bench``: storage engine micro-benchmarks (not tests).

Prints (1) append throughput of 1 MiB record batches through ``Log.append_as_leader`` against a raw
sequential ``os.write`` of the same bytes to a file in the same directory, in the same run (target >= 80%),
and (2) the cost of a read-slice lookup ``Log.read(offset, max_bytes)`` at random offsets of a multi-segment
log (target <= 20 us). Neither path fsyncs (Kafka's default flush policy relies on the page cache).
Bounded: ``--batches`` appends (default 256 MiB) and ``--lookups`` reads.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import struct
import tempfile
import time
from pathlib import Path

import crc32c

from storage.config import LogConfig
from storage.log import Log

MiB = 1 << 20


def make_batch(payload: int, records: int = 1, *, timestamp: int = 0) -> bytearray:
    """A valid uncompressed v2 batch with ``records`` records of ``payload`` bytes of value each."""
    body = bytearray()
    for i in range(records):
        value = os.urandom(16) * (payload // 16) + bytes(payload % 16)
        rec = bytearray()
        rec += b"\x00"  # attributes
        rec += _varint(0)  # timestamp delta
        rec += _varint(i)  # offset delta
        rec += _varint(-1)  # null key
        rec += _varint(len(value)) + value
        rec += _varint(0)  # no headers
        body += _varint(len(rec)) + rec
    tail = struct.pack(">hiqqqhii", 0, records - 1, timestamp, timestamp, -1, -1, -1, records) + body
    crc = crc32c.crc32c(tail)
    head = struct.pack(">qiibI", 0, 4 + 1 + 4 + len(tail), 0, 2, crc)
    return bytearray(head + tail)


def _varint(v: int) -> bytes:
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _raw_round(dir: Path, batch: bytearray, batches: int) -> float:
    path = dir / "raw.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    for _ in range(batches):
        os.write(fd, batch)
    seconds = time.perf_counter() - t0
    os.close(fd)
    path.unlink()
    return seconds


def _log_round(dir: Path, batch: bytearray, batches: int) -> float:
    log_dir = dir / "bench-0"
    lg = Log.open(log_dir, LogConfig(max_message_bytes=2 * MiB))
    t0 = time.perf_counter()
    for _ in range(batches):
        lg.append_as_leader(batch, 0, now_ms=0)
    seconds = time.perf_counter() - t0
    lg.close_handles()
    shutil.rmtree(log_dir)
    return seconds


def bench_append(dir: Path, batches: int, rounds: int) -> tuple[float, float, float]:
    """Median MiB/s of the log and of raw writes, and the median per-round ratio; rounds alternate which
    side goes first (page-cache state favours whoever runs second) after one discarded warm-up round."""
    batch = make_batch(MiB - 200)
    mib = batches * len(batch) / MiB
    _raw_round(dir, batch, batches)
    _log_round(dir, batch, batches)
    log_rates, raw_rates, ratios = [], [], []
    for r in range(rounds):
        if r % 2:
            log_s = _log_round(dir, batch, batches)
            raw_s = _raw_round(dir, batch, batches)
        else:
            raw_s = _raw_round(dir, batch, batches)
            log_s = _log_round(dir, batch, batches)
        log_rates.append(mib / log_s)
        raw_rates.append(mib / raw_s)
        ratios.append(raw_s / log_s)
    return statistics.median(log_rates), statistics.median(raw_rates), statistics.median(ratios)


def bench_lookup(dir: Path, lookups: int) -> tuple[float, float, int, int]:
    cfg = LogConfig(segment_bytes=8 * MiB)
    lg = Log.open(dir / "lookup-0", cfg)
    small = make_batch(900, records=3)
    for _ in range(40_000):
        lg.append_as_leader(small, 0, now_ms=0)
    rng = random.Random(1)
    offsets = [rng.randrange(lg.log_end_offset) for _ in range(lookups)]
    read = lg.read
    t0 = time.perf_counter()
    for o in offsets:
        read(o, MiB)
    fetch_us = (time.perf_counter() - t0) / lookups * 1e6
    t0 = time.perf_counter()
    for o in offsets:
        read(o, 1)
    one_us = (time.perf_counter() - t0) / lookups * 1e6
    n_segments, leo = len(lg.segments), lg.log_end_offset
    lg.close_handles()
    return fetch_us, one_us, n_segments, leo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--batches", type=int, default=256, help="1 MiB batches per append round")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--lookups", type=int, default=20_000)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="storage-bench-", dir=args.dir))
    try:
        log_mb, raw_mb, ratio = bench_append(scratch, args.batches, args.rounds)
        print(
            f"append 1 MiB batches: log {log_mb:8.0f} MiB/s | raw os.write {raw_mb:8.0f} MiB/s | "
            f"{ratio:6.1%} of raw (target >= 80%) {'OK' if ratio >= 0.8 else 'MISS'}"
        )
        fetch_us, one_us, n_segments, leo = bench_lookup(scratch, args.lookups)
        print(
            f"read-slice lookup ({leo} offsets, {n_segments} segments): "
            f"max_bytes=1 MiB {fetch_us:6.2f} us | max_bytes=1 {one_us:6.2f} us "
            f"(target <= 20 us) {'OK' if max(fetch_us, one_us) <= 20 else 'MISS'}"
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
