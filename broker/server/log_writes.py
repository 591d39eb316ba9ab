"""The broker's side of the log writers: appends leave the event loop, their completions come back to it.

Contract:
- `LogWrites.attach(log)` gives a partition's log one of its log directory's `WRITERS_PER_DIR` writer threads
  (`storage.log_writer.LogWriter`, created on first use; a partition always gets the same one, by topic name
  and partition number, so its writes stay in order). From then on an append returns once reserved; its bytes
  reach the file on that thread while the event loop goes on serving everything else. A stalled write (the
  kernel throttling dirty pages, a slow device) delays only the producers and followers waiting for writes
  queued on that thread: fetches, metadata and the partitions of the other writers go on.
- The writer wakes the loop (`call_soon_threadsafe`); `_on_written` applies the completions to the logs and
  calls `on_log_end_offset_moved(log)` for each log whose log end offset moved (the ReplicaManager: the leader's
  high watermark, the purgatories, a due flush), then answers the waiters.
- `wait_written(entries)` is what a produce answer (any acks) and a follower's next fetch wait for: one future
  per (log, offset) not yet written, done when the log end offset reaches it, or failed when the log was cut
  back meanwhile (its write failed and was rolled back: KAFKA_STORAGE_ERROR; a truncation, as a leader
  becoming follower: NOT_LEADER_OR_FOLLOWER). Nothing is answered, and no high
  watermark moves, before the bytes are in the file: the same guarantee as Kafka's in-place append.
- `close` lets the writers finish what they hold and stops them (shutdown, before the logs close).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import zlib
from collections.abc import Callable
from pathlib import Path

from storage import Log
from storage.log_writer import LogWriter

log = logging.getLogger("broker.log_writes")

# Threads cost little (they wait in the kernel, not for the GIL); four per directory let a stalled partition
# hold up about a quarter of the others, where one thread would hold up all.
WRITERS_PER_DIR = 4


class _Wait:
    """One caller waiting for several writes: one future, answered when the last is settled."""

    __slots__ = ("future", "results", "remaining")

    def __init__(self, future: asyncio.Future[list[bool]], n: int) -> None:
        self.future = future
        self.results = [True] * n
        self.remaining = n

    def settle(self, index: int, ok: bool) -> None:
        self.results[index] = ok
        self.remaining -= 1
        if self.remaining == 0 and not self.future.done():
            self.future.set_result(self.results)


class LogWrites:
    def __init__(self, on_log_end_offset_moved: Callable[[Log], None]) -> None:
        self.on_log_end_offset_moved = on_log_end_offset_moved
        self.writers: dict[tuple[Path, int], LogWriter] = {}
        # per log: (offset the log end offset must reach, the log's truncations then, waiter, its index)
        self._waiters: dict[Log, list[tuple[int, int, _Wait, int]]] = {}
        # One wake-up of the loop serves every writer's completions: the writers' threads only schedule it when
        # none is pending (a lock, not the GIL-holding loop, decides).
        self._lock = threading.Lock()
        self._scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self, log_: Log) -> None:
        if log_.writer is not None:
            return
        tp = log_.topic_partition
        key = (log_.dir.parent, (zlib.crc32(tp.topic.encode()) + tp.partition) % WRITERS_PER_DIR)
        writer = self.writers.get(key)
        if writer is None:
            self._loop = asyncio.get_running_loop()
            writer = self.writers[key] = LogWriter(f"{key[0].name}-{key[1]}", self._notify)
        log_.writer = writer

    def _notify(self) -> None:
        """On a writer's thread: completions wait; wake the loop unless a wake-up is already on its way."""
        with self._lock:
            if self._scheduled:
                return
            self._scheduled = True
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._on_written)

    def _on_written(self) -> None:
        with self._lock:
            self._scheduled = False
        for writer in list(self.writers.values()):
            writer.apply_completed()
            for log_ in writer.take_changed():
                try:
                    self.on_log_end_offset_moved(log_)
                except Exception:
                    log.exception("%s: after a write", log_.topic_partition)
                waiters = self._waiters.get(log_)
                if waiters:
                    self._answer(log_, waiters)

    @staticmethod
    def _outcome(log_: Log, offset: int, at: int) -> bool | None:
        """True: written; False: the log was cut back since `at` (it may never be); None: not yet."""
        if at != log_.truncations:
            return False
        return True if log_.log_end_offset >= offset else None

    def _answer(self, log_: Log, waiters: list[tuple[int, int, _Wait, int]]) -> None:
        left = []
        for entry in waiters:
            offset, at, wait, index = entry
            outcome = self._outcome(log_, offset, at)
            if outcome is None:
                left.append(entry)
            else:
                wait.settle(index, outcome)
        if left:
            self._waiters[log_] = left
        else:
            del self._waiters[log_]

    def unwritten(self, log_: Log | None, offset: int) -> tuple[Log, int, int] | None:
        """(log, offset, truncations) when `offset` (exclusive end of an append) is not written yet, else None."""
        if log_ is None or log_.writer is None or log_.log_end_offset >= offset:
            return None
        return log_, offset, log_.truncations

    def wait_written(self, entries: list[tuple[Log, int, int]]) -> asyncio.Future[list[bool]]:
        """For each (log, offset, truncations): True once written; False when the log was cut back meanwhile
        (its write failed and was rolled back, or a truncation: it may never be written). One future."""
        future: asyncio.Future[list[bool]] = asyncio.get_running_loop().create_future()
        wait = _Wait(future, len(entries))
        for index, (log_, offset, at) in enumerate(entries):
            outcome = self._outcome(log_, offset, at)
            if outcome is None:
                self._waiters.setdefault(log_, []).append((offset, at, wait, index))
            else:
                wait.settle(index, outcome)
        if not entries:
            future.set_result([])
        return future

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()
            writer.apply_completed()
        self.writers.clear()
