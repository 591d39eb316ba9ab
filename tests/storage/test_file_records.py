"""storage.file_records: whole log entries read from a file in chunks, stopping at a partial tail."""

from __future__ import annotations

from pathlib import Path

from kafka.record.memory_records import MemoryRecordsBuilder

from records import build_batch, parse_header
from storage.file_records import iter_entries, iter_file_entries

T0 = 1_700_000_000_000


def test_entries_read_in_chunks_smaller_than_an_entry(tmp_path: Path) -> None:
    batches = [build_batch([(b"k%d" % i, b"v" * (50 + i * 40), [], T0)], base_offset=i) for i in range(6)]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches) + batches[0][:30])
    with open(path, "rb") as f:
        # every entry is larger than one chunk, or straddles two
        got = list(iter_file_entries(f.fileno(), 0, path.stat().st_size, chunk_bytes=100))
    assert [parse_header(e).base_offset for _p, _m, e in got] == list(range(6))
    assert [bytes(e) for _p, _m, e in got] == batches
    assert [p for p, _m, _e in got] == [sum(len(b) for b in batches[:i]) for i in range(6)]
    assert {m for _p, m, _e in got} == {2}


def test_legacy_messages_framed_like_batches() -> None:
    b = MemoryRecordsBuilder(magic=1, compression_type=0, batch_size=1 << 20, offset=0)
    b.append(T0, b"k", b"v")
    b.append(T0 + 1, b"k", b"w")
    b.close()
    legacy = bytes(b.buffer())
    v2 = build_batch([(b"k", b"x", [], T0)], base_offset=2)
    got = list(iter_entries(legacy + v2))
    assert [(p, m) for p, m, _e in got] == [(0, 1), (len(legacy) // 2, 1), (len(legacy), 2)]


def test_stops_at_impossible_or_oversized_lengths() -> None:
    batch = bytearray(build_batch([(b"k", b"v" * 100, [], T0)]))
    assert len(list(iter_entries(batch, max_entry_bytes=len(batch) - 13))) == 0
    short = bytearray(batch)
    short[8:12] = (48).to_bytes(4, "big")  # below a v2 header
    assert list(iter_entries(short)) == []
    negative = bytearray(batch)
    negative[8:12] = (-1).to_bytes(4, "big", signed=True)
    assert list(iter_entries(negative)) == []
