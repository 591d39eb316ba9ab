"""Events, their JSON form, and the aggregates the pipeline must produce (no Spark needed).

An event is ``{"key": str, "event_time": int (ms since epoch), "amount": int}`` serialized as
compact JSON (the Kafka record's value; the record key is the event key, UTF-8).

The streaming job groups events by key and tumbling event-time window and emits one row per
(key, window) in append mode, i.e. only once the watermark (max event time seen minus the delay)
has passed the window's end. ``expected_aggregates`` computes exactly those rows for a sequence
of runs, each run seeing a prefix of the stream; ``FLUSH_KEY`` events exist only to advance the
watermark at the end of a stream and are never aggregated into the expected results.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

FLUSH_KEY = "__flush__"


@dataclass(frozen=True)
class Event:
    key: str
    event_time: int
    amount: int

    def to_json(self) -> bytes:
        return json.dumps({"key": self.key, "event_time": self.event_time, "amount": self.amount},
                          separators=(",", ":")).encode()

    @staticmethod
    def from_json(data: bytes) -> Event:
        d = json.loads(data)
        return Event(str(d["key"]), int(d["event_time"]), int(d["amount"]))


@dataclass(frozen=True)
class Aggregate:
    """One output row: events of ``key`` with window_start <= event_time < window_end."""

    key: str
    window_start: int
    window_end: int
    count: int
    total: int

    def to_json(self) -> bytes:
        return json.dumps({"key": self.key, "window_start": self.window_start, "window_end": self.window_end,
                           "count": self.count, "sum": self.total}, separators=(",", ":")).encode()

    @staticmethod
    def from_json(data: bytes) -> Aggregate:
        d = json.loads(data)
        return Aggregate(str(d["key"]), int(d["window_start"]), int(d["window_end"]), int(d["count"]),
                         int(d["sum"]))


def generate_events(count: int, *, keys: Sequence[str] = ("a", "b", "c"), start_ms: int = 1_700_000_000_000,
                    step_ms: int = 1000, max_disorder_ms: int = 0, seed: int = 7) -> list[Event]:
    """``count`` events, one every step_ms on average, each up to max_disorder_ms out of order."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        t = start_ms + i * step_ms - (rng.randrange(max_disorder_ms + 1) if max_disorder_ms else 0)
        out.append(Event(rng.choice(list(keys)), t, rng.randrange(1, 100)))
    return out


def flush_event(after: Iterable[Event], watermark_ms: int, window_ms: int) -> Event:
    """An event far enough ahead that the watermark passes every window of ``after``."""
    latest = max(e.event_time for e in after)
    return Event(FLUSH_KEY, latest + watermark_ms + 2 * window_ms, 0)


def window_of(event_time: int, window_ms: int) -> tuple[int, int]:
    start = event_time - (event_time % window_ms)
    return start, start + window_ms


def expected_aggregates(runs: Sequence[Sequence[Event]], *, window_ms: int, watermark_ms: int) -> list[Aggregate]:
    """The rows an append-mode run emits, given the events each successive run reads.

    Within a run every event is in one micro-batch, so none is late to that run's own watermark; an
    event of a later run is dropped if it falls in a window the earlier runs' watermark has closed
    (Spark's state for that window is gone). Rows are emitted for windows that end at or before the
    final watermark (max event time over all runs minus watermark_ms).
    """
    state: dict[tuple[str, int], list[int]] = {}
    emitted: list[Aggregate] = []
    watermark = -(2**63)
    for events in runs:
        for e in events:
            start, end = window_of(e.event_time, window_ms)
            if end <= watermark:
                continue  # late: its window was already finalized
            acc = state.setdefault((e.key, start), [0, 0])
            acc[0] += 1
            acc[1] += e.amount
        if events:
            watermark = max(watermark, max(e.event_time for e in events) - watermark_ms)
        for (key, start), (n, total) in sorted(state.items()):
            if start + window_ms <= watermark:
                emitted.append(Aggregate(key, start, start + window_ms, n, total))
                del state[(key, start)]
    return sorted((a for a in emitted if a.key != FLUSH_KEY), key=lambda a: (a.key, a.window_start))


def batch_totals(events: Iterable[Event]) -> dict[str, tuple[int, int]]:
    """key -> (count, sum of amount): what the batch job computes over a range of records."""
    out: dict[str, tuple[int, int]] = {}
    for e in events:
        n, s = out.get(e.key, (0, 0))
        out[e.key] = (n + 1, s + e.amount)
    return out


class ConflictingRows(ValueError):
    """Two output rows for one (key, window) that differ: a replay did not reproduce the row it replaced."""


def one_row_per_window(rows: Iterable[Aggregate]) -> list[Aggregate]:
    """What a reader of the sink keeps: one row per (key, window_start), sorted.

    Spark's Kafka sink is at-least-once: a micro-batch run again after a failure (its rows written, its commit
    not yet recorded in the checkpoint) writes its rows again. In append mode every (key, window) row is final
    and a replayed batch recomputes it from the same offsets and state, so its copies are equal; keyed by
    window, the reader's view is exact. Copies that differ raise ConflictingRows instead of picking one.
    """
    kept: dict[tuple[str, int], Aggregate] = {}
    for row in rows:
        seen = kept.setdefault((row.key, row.window_start), row)
        if seen != row:
            raise ConflictingRows(f"two rows for key {row.key} window {row.window_start}: {seen} and {row}")
    return [kept[k] for k in sorted(kept)]


def compare_aggregates(expected: Sequence[Aggregate], actual: Sequence[Aggregate]) -> list[str]:
    """Human-readable differences; empty when actual holds exactly the expected rows, once each."""
    problems: list[str] = []
    seen: dict[tuple[str, int], Aggregate] = {}
    for a in actual:
        k = (a.key, a.window_start)
        if k in seen:
            problems.append(f"duplicate row for key {a.key} window {a.window_start}: {seen[k]} and {a}")
        seen[k] = a
    want = {(a.key, a.window_start): a for a in expected}
    for k, a in sorted(want.items()):
        got = seen.get(k)
        if got is None:
            problems.append(f"missing row {a}")
        elif got != a:
            problems.append(f"wrong row: expected {a}, got {got}")
    for k in sorted(set(seen) - set(want)):
        problems.append(f"unexpected row {seen[k]}")
    return problems
