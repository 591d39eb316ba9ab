"""Shared pieces of the stock-client end-to-end tests.

- `Msg`: one message as a Kafka user sees it (partition, key, value, headers); `make_messages(n, partitions,
  tag)` builds a deterministic mix of keys, header sets, null values and compressible/incompressible values.
- `assert_same_per_partition(sent, received)`: every sent message arrived exactly once, and each partition
  holds its messages in send order (Kafka's only ordering promise).
- `assert_order_kept(sent, received)`: the same when the client's partitioner chose the partitions: the
  messages of each partition are the send-order subsequence of `sent` that landed there.
- `wait_until(pred, timeout, what)`: a bounded poll for conditions no API can wait on.
- `stored_codecs(log_dir, topic)`: the compression codecs of the record batches in the topic's segment
  files, read with a few struct calls (independent of our `protocol` package) to prove the producer's
  batches were stored as sent, not recompressed.
"""

from __future__ import annotations

import struct
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Msg:
    partition: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()

    def ident(self) -> tuple[bytes | None, bytes | None, Headers]:
        return (self.key, self.value, self.headers)


def make_messages(n: int, partitions: int, tag: str) -> list[Msg]:
    """`n` messages spread round-robin over `partitions`; every 10th value is null, headers vary 0..2."""
    out: list[Msg] = []
    for i in range(n):
        key = f"{tag}-key-{i}".encode()
        if i % 10 == 3:
            value = None
        elif i % 10 == 7:
            # Incompressible-looking bytes so codecs see more than repetitive text.
            value = bytes((i * 31 + j * 17) % 251 for j in range(64 + i % 97))
        else:
            value = (f"{tag} value {i} " * (1 + i % 5)).encode()
        headers: Headers
        if i % 3 == 0:
            headers = ()
        elif i % 3 == 1:
            headers = (("idx", str(i).encode()),)
        else:
            headers = (("idx", str(i).encode()), ("tag", tag.encode()))
        out.append(Msg(i % partitions, key, value, headers))
    return out


def assert_same_per_partition(sent: Sequence[Msg], received: Iterable[Msg]) -> None:
    want: dict[int, list[tuple]] = defaultdict(list)
    got: dict[int, list[tuple]] = defaultdict(list)
    for m in sent:
        want[m.partition].append(m.ident())
    for m in received:
        got[m.partition].append(m.ident())
    assert sorted(got) == sorted(want), f"partitions received {sorted(got)} != sent {sorted(want)}"
    for p in want:
        w, g = want[p], got[p]
        if w != g:
            pairs = enumerate(zip(w, g, strict=False))
            first = next((i for i, (a, b) in pairs if a != b), min(len(w), len(g)))
            raise AssertionError(
                f"partition {p}: sent {len(w)} received {len(g)}; first difference at index {first}: "
                f"sent {w[first] if first < len(w) else None!r} "
                f"received {g[first] if first < len(g) else None!r}")


def assert_order_kept(sent: Sequence[Msg], received: Iterable[Msg]) -> None:
    """For a client-chosen partitioner: map each received message back to its send position."""
    received = list(received)
    position = {m.ident(): i for i, m in enumerate(sent)}
    assert len(position) == len(sent), "sent messages must be distinguishable"
    by_partition: dict[int, list[int]] = defaultdict(list)
    for m in received:
        ident = m.ident()
        assert ident in position, f"received a message that was never sent: {ident!r}"
        by_partition[m.partition].append(position[ident])
    seen = [i for idx in by_partition.values() for i in idx]
    assert len(seen) == len(set(seen)), "a message was received twice"
    assert len(seen) == len(sent), f"received {len(seen)} of {len(sent)} messages"
    for p, idx in by_partition.items():
        assert idx == sorted(idx), f"partition {p} is out of send order"


def wait_until(pred: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def stored_codecs(log_dir: Path, topic: str) -> set[str]:
    """Codec names of every batch in `<log_dir>/<topic>-<p>/*.log` (v2 batch: attributes at byte 21)."""
    names: set[str] = set()
    for seg in sorted(Path(log_dir).glob(f"{topic}-*/*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 23 <= len(data):
            _base_offset, length = struct.unpack_from(">qi", data, pos)
            if length <= 0:
                break  # preallocated zero tail
            assert data[pos + 16] == 2, f"{seg}: magic {data[pos + 16]} at {pos}"
            (attributes,) = struct.unpack_from(">h", data, pos + 21)
            names.add(CODECS[attributes & 0x7])
            pos += 12 + length
    return names
