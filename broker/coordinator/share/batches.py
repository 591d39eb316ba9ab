"""Merging state batches into a share partition's current state (Kafka's PersisterStateBatchCombiner).

Contract: `combine(so_far, new, start_offset)` returns sorted, non-overlapping batches covering exactly the
offsets the inputs cover at or after `start_offset` (-1: no pruning; a batch straddling it is cut to start
there). Where batches overlap, each offset keeps the delivery information that ranks highest, comparing the
delivery count first and the delivery state second (Kafka's rule: a record only ever moves on), whichever
list it came from. Neighbouring offsets with the same count and state form one batch.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from broker.coordinator.share.persister import PersisterStateBatch


def combine(so_far: Iterable[PersisterStateBatch], new: Iterable[PersisterStateBatch],
            start_offset: int) -> list[PersisterStateBatch]:
    batches = []
    for b in (*so_far, *new):
        if start_offset != -1:
            if b.last_offset < start_offset:
                continue
            if b.first_offset < start_offset:
                b = PersisterStateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        if b.first_offset <= b.last_offset:
            batches.append(b)
    if len(batches) < 2:
        return batches
    batches.sort(key=lambda b: b.first_offset)
    # Every offset where the set of covering batches can change.
    points = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    out: list[PersisterStateBatch] = []
    active: list[tuple[int, int, int]] = []  # (-count, -state, last offset): the best ranked on top
    i = 0
    for lo, nxt in zip(points, points[1:], strict=False):
        while i < len(batches) and batches[i].first_offset <= lo:
            b = batches[i]
            heapq.heappush(active, (-b.delivery_count, -b.delivery_state, b.last_offset))
            i += 1
        while active and active[0][2] < lo:
            heapq.heappop(active)
        if not active:
            continue
        count, state = -active[0][0], -active[0][1]
        hi = nxt - 1
        last = out[-1] if out else None
        if (last is not None and last.last_offset + 1 == lo and last.delivery_count == count
                and last.delivery_state == state):
            out[-1] = PersisterStateBatch(last.first_offset, hi, state, count)
        else:
            out.append(PersisterStateBatch(lo, hi, state, count))
    return out
