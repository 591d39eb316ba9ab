"""Delayed operations and the purgatory that watches them (Kafka's DelayedOperation / DelayedOperationPurgatory).

Contract, as Kafka's:
- A `DelayedOperation` has a deadline, `try_complete()` (check the condition; if met, call
  `force_complete()` and return True), `on_complete()` (runs exactly once, whether completed or expired)
  and `on_expiration()` (runs before `on_complete()` when the deadline passes first).
- `Purgatory.try_complete_else_watch(op, keys)` completes the operation at once when it can; otherwise it
  watches the operation under each key (a TopicPartition, a group id...) and arms one timer for it.
- `Purgatory.check_and_complete(key)` is called after every event that may unblock operations on that
  key (an append, a high-watermark move, a leadership change) and tries the watched operations.
- Everything runs on the broker's single event loop: no locks. Timers use `loop.call_later`; nothing polls.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable, Iterable

log = logging.getLogger("broker.purgatory")


class DelayedOperation:
    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = max(0, delay_ms)
        self.completed = False
        self._timer: asyncio.TimerHandle | None = None

    def try_complete(self) -> bool:
        raise NotImplementedError

    def on_complete(self) -> None:
        raise NotImplementedError

    def on_expiration(self) -> None:
        pass

    def force_complete(self) -> bool:
        if self.completed:
            return False
        self.completed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self.on_complete()
        except Exception:
            log.exception("delayed operation %s failed to complete", type(self).__name__)
        return True

    def expire_within(self, delay_s: float) -> bool:
        """Bring a watched operation's deadline forward to `delay_s` from now (never later than it was).
        False when it is not watched yet (no timer): the caller decides without one."""
        if self._timer is None or self.completed:
            return False
        loop = asyncio.get_running_loop()
        due = loop.time() + max(0.0, delay_s)
        if due < self._timer.when():
            self._timer.cancel()
            self._timer = loop.call_at(due, self._expire)
        return True

    def _expire(self) -> None:
        self._timer = None
        if self.completed:
            return
        try:
            self.on_expiration()
        except Exception:
            log.exception("delayed operation %s failed on expiration", type(self).__name__)
        self.force_complete()


class Purgatory:
    def __init__(self, name: str, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.name = name
        self._loop = loop
        self._watchers: dict[Hashable, list[DelayedOperation]] = {}

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def try_complete_else_watch(self, op: DelayedOperation, keys: Iterable[Hashable]) -> bool:
        if op.try_complete():
            return True
        keys = list(keys)
        for key in keys:
            self._watchers.setdefault(key, []).append(op)
        # An event may have slipped in between the check and the watch only if it ran on another thread;
        # on one loop that cannot happen, so one check suffices (Kafka needs a second try here).
        op._timer = self.loop.call_later(op.delay_ms / 1000.0, op._expire)
        return False

    def check_and_complete(self, key: Hashable) -> int:
        ops = self._watchers.get(key)
        if not ops:
            return 0
        completed = 0
        remaining = []
        for op in ops:
            if op.completed:
                continue
            if op.try_complete():
                completed += 1
            else:
                remaining.append(op)
        if remaining:
            self._watchers[key] = remaining
        else:
            del self._watchers[key]
        return completed

    def watched(self) -> int:
        return sum(1 for ops in self._watchers.values() for op in ops if not op.completed)

    def purge_completed(self) -> None:
        for key in list(self._watchers):
            ops = [op for op in self._watchers[key] if not op.completed]
            if ops:
                self._watchers[key] = ops
            else:
                del self._watchers[key]

    def shutdown(self) -> None:
        """Expire everything now (on broker shutdown), so every waiting client gets an answer."""
        for ops in list(self._watchers.values()):
            for op in ops:
                if not op.completed:
                    op._expire()
        self._watchers.clear()
