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
  per (log, offset) not yet written, done when the log end offset reaches it, or failed with
  KAFKA_STORAGE_ERROR when its write failed and the log rolled it back. Nothing is answered, and no high
  watermark moves, before the bytes are in the file: the same guarantee as Kafka's in-place append.
- `close` lets the writers finish what they hold and stops them (shutdown, before the logs close).
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

from storage import Log
from storage.log_writer import LogWriter

log = logging.getLogger("broker.log_writes")

# Threads cost little (they wait in the kernel, not for the GIL); four per directory let a stalled partition
# hold up about a quarter of the others, where one thread would hold up all.
WRITERS_PER_DIR = 4


class LogWrites:
    def __init__(self, on_log_end_offset_moved: Callable[[Log], None]) -> None:
        self.on_log_end_offset_moved = on_log_end_offset_moved
        self.writers: dict[tuple[Path, int], LogWriter] = {}
        # per log: (offset the log end offset must reach, the log's write_rollbacks then, future)
        self._waiters: dict[Log, list[tuple[int, int, asyncio.Future[bool]]]] = {}

    def attach(self, log_: Log) -> None:
        if log_.writer is not None:
            return
        tp = log_.topic_partition
        key = (log_.dir.parent, (zlib.crc32(tp.topic.encode()) + tp.partition) % WRITERS_PER_DIR)
        writer = self.writers.get(key)
        if writer is None:
            loop = asyncio.get_running_loop()
            writer = LogWriter(f"{key[0].name}-{key[1]}")
            writer.notify = lambda: loop.call_soon_threadsafe(self._on_written, writer)
            self.writers[key] = writer
        log_.writer = writer

    def _on_written(self, writer: LogWriter) -> None:
        writer.apply_completed()
        for log_ in writer.take_changed():
            try:
                self.on_log_end_offset_moved(log_)
            except Exception:
                log.exception("%s: after a write", log_.topic_partition)
            waiters = self._waiters.get(log_)
            if waiters:
                self._answer(log_, waiters)

    def _answer(self, log_: Log, waiters: list[tuple[int, int, asyncio.Future[bool]]]) -> None:
        leo, rollbacks = log_.log_end_offset, log_.write_rollbacks
        left = []
        for offset, at, future in waiters:
            if future.done():
                continue
            if at != rollbacks:
                future.set_result(False)
            elif leo >= offset:
                future.set_result(True)
            else:
                left.append((offset, at, future))
        if left:
            self._waiters[log_] = left
        else:
            del self._waiters[log_]

    def unwritten(self, log_: Log | None, offset: int) -> tuple[Log, int, int] | None:
        """(log, offset, rollbacks) when `offset` (exclusive end of an append) is not written yet, else None."""
        if log_ is None or log_.writer is None or log_.log_end_offset >= offset:
            return None
        return log_, offset, log_.write_rollbacks

    async def wait_written(self, entries: Iterable[tuple[Log, int, int]]) -> list[bool]:
        """For each (log, offset, rollbacks): True once written, False when its write failed."""
        loop = asyncio.get_running_loop()
        futures = []
        for log_, offset, at in entries:
            future: asyncio.Future[bool] = loop.create_future()
            if at != log_.write_rollbacks:
                future.set_result(False)
            elif log_.log_end_offset >= offset:
                future.set_result(True)
            else:
                self._waiters.setdefault(log_, []).append((offset, at, future))
            futures.append(future)
        return list(await asyncio.gather(*futures))

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()
            writer.apply_completed()
        self.writers.clear()
