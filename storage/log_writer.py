"""A writer thread of a log directory: appends reach the disk off the caller's thread, in order.

Contract:
- A ``Log`` with a ``writer`` reserves an append on the caller's thread (offsets assigned, producer state,
  index entries, ``appended_end_offset`` moved) and hands its bytes here as a ``PendingWrite``; the thread
  ``pwritev``s them at their reserved position, in submission order (several queued writes of one segment in
  one call). A write that stalls in the kernel (dirty-page throttling, a slow device) holds up only the writes
  queued behind it on this thread, never the thread that submitted it.
- Written jobs wait in ``completed`` until the owner's thread calls ``apply_completed`` (``notify`` tells it
  there is something to take, once per batch); only then does each log's ``log_end_offset`` (what readers,
  the high watermark and followers see) move, on the owner's thread, so a log's readable state changes on one
  thread only.
- Before a log's data, its metadata files still behind are written (``Log.flush_metadata_files``: a new
  partition's ``partition.metadata``, a new leader's epoch), so no data reaches the disk without them.
- A failed write (ENOSPC, EIO) removes its partial bytes and fails every later write of the same log (their
  positions assumed it) until the log, having taken the failures and rolled its reservations back, calls
  ``clear_failure``.
- ``wait_idle(log)`` blocks until none of the log's writes is queued or in progress (truncation, close,
  a replica move); ``close`` finishes what is queued and stops the thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage.log import Log
    from storage.segment import LogSegment

__all__ = ["LogWriter", "PendingWrite", "injected_stall"]

log = logging.getLogger(__name__)

# Fault injection for the `stall` bench and tests: every append's write to a log whose directory name starts
# with BROKER_WRITE_STALL_TOPIC (all logs when unset) sleeps BROKER_WRITE_STALL_MS first, on whichever thread
# writes it (the writer's, or the event loop's with synchronous appends).
WRITE_STALL_S = float(os.environ.get("BROKER_WRITE_STALL_MS", "0") or 0) / 1000
WRITE_STALL_TOPIC = os.environ.get("BROKER_WRITE_STALL_TOPIC", "")


def injected_stall(log_path: Path) -> None:
    if WRITE_STALL_S > 0 and log_path.parent.name.startswith(WRITE_STALL_TOPIC):
        time.sleep(WRITE_STALL_S)


# pwritev takes at most IOV_MAX buffers; stay well below it and bound the bytes of one call.
_MAX_BUFFERS = 256
_MAX_CALL_BYTES = 16 << 20


@dataclass(eq=False)
class PendingWrite:
    log: Log
    segment: LogSegment
    position: int
    data: Any  # bytes-like, kept alive until written
    end_offset: int  # the log end offset once this write is in the file
    truncations: int  # the log's truncations when it was reserved
    error: OSError | None = None


class LogWriter:
    def __init__(self, name: str, notify: Callable[[], None] | None = None) -> None:
        self.name = name
        self.notify = notify
        self._queue: deque[PendingWrite] = deque()
        self._completed: deque[PendingWrite] = deque()
        self._cond = threading.Condition()
        self._in_flight: dict[Log, int] = {}  # queued or being written, per log
        self._failed: set[Log] = set()  # logs whose later queued writes must fail too
        self._closing = False
        self._changed: set[Log] = set()  # applied, not yet returned by apply_completed (owner's thread only)
        self._sleeping = False  # the thread waits for work: a submit must wake it
        self._idle_waiters = 0  # callers in wait_idle: a completion must wake them
        self._thread = threading.Thread(target=self._run, name=f"log-writer-{name}", daemon=True)
        self._thread.start()

    def submit(self, job: PendingWrite) -> None:
        with self._cond:
            if self._closing:
                raise RuntimeError(f"log writer {self.name} is closed")
            self._queue.append(job)
            self._in_flight[job.log] = self._in_flight.get(job.log, 0) + 1
            if self._sleeping:
                self._cond.notify_all()

    def has_unwritten(self, log_: Log) -> bool:
        with self._cond:
            return log_ in self._in_flight

    def apply_completed(self) -> None:
        """On the owner's thread: hand the written (or failed) appends to their logs, in submission order."""
        with self._cond:
            done = list(self._completed)
            self._completed.clear()
        for job in done:
            job.log.on_written(job)
            self._changed.add(job.log)

    def take_changed(self) -> set[Log]:
        """On the owner's thread: the logs ``apply_completed`` changed since the last call (also those a
        ``Log.wait_for_writes`` applied in between), so whoever announces log end offsets hears of each."""
        changed, self._changed = self._changed, set()
        return changed

    def wait_idle(self, log_: Log) -> None:
        with self._cond:
            self._idle_waiters += 1
            try:
                while log_ in self._in_flight:
                    self._cond.wait()
            finally:
                self._idle_waiters -= 1

    def clear_failure(self, log_: Log) -> None:
        """The log has rolled its failed reservations back: its next writes go to the disk again."""
        with self._cond:
            self._failed.discard(log_)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()  # the thread, asleep or about to look at the queue again
        self._thread.join()

    # -- the thread -----------------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._sleeping = True
                    self._cond.wait()
                    self._sleeping = False
                if not self._queue:
                    return
                # Everything queued at once: one lock, one wake-up of the owner per round, however many logs.
                runs = []
                while self._queue and len(runs) < _MAX_BUFFERS:
                    runs.append(self._take_contiguous())
            for run in runs:
                self._write(run)
            with self._cond:
                had_completed = bool(self._completed)
                for run in runs:
                    self._completed.extend(run)
                    for job in run:
                        left = self._in_flight[job.log] - 1
                        if left:
                            self._in_flight[job.log] = left
                        else:
                            del self._in_flight[job.log]
                if self._idle_waiters:
                    self._cond.notify_all()
            if not had_completed and self.notify is not None:
                try:
                    self.notify()
                except RuntimeError:  # the owner's event loop is gone (shutdown): nobody is waiting
                    pass

    def _take_contiguous(self) -> list[PendingWrite]:
        """The queue's head and the writes that follow it in the same file without a gap."""
        first = self._queue.popleft()
        batch = [first]
        end = first.position + len(first.data)
        while self._queue and len(batch) < _MAX_BUFFERS and end - first.position < _MAX_CALL_BYTES:
            nxt = self._queue[0]
            if nxt.segment is not first.segment or nxt.position != end:
                break
            self._queue.popleft()
            batch.append(nxt)
            end += len(nxt.data)
        return batch

    def _write(self, batch: list[PendingWrite]) -> None:
        first = batch[0]
        if first.log in self._failed:
            for job in batch:
                job.error = OSError(f"an earlier write to {first.segment.log_path} failed")
            return
        buffers = [memoryview(job.data) for job in batch]
        position = first.position
        injected_stall(first.segment.log_path)
        try:
            # Kafka's append flushes partition.metadata first: data on disk always has its topic id (and here
            # its leader epochs), whatever a crash leaves.
            first.log.flush_metadata_files()
            while buffers:
                written = os.pwritev(first.segment.fd, buffers, position)
                position += written
                while buffers and written >= len(buffers[0]):
                    written -= len(buffers[0])
                    buffers.pop(0)
                if written:
                    buffers[0] = buffers[0][written:]
        except OSError as e:
            log.error("%s: write at position %d failed: %s", first.segment.log_path, first.position, e)
            try:
                os.ftruncate(first.segment.fd, first.position)
            except OSError:
                log.exception("could not remove a partial write from %s", first.segment.log_path)
            with self._cond:
                self._failed.add(first.log)
            for job in batch:
                job.error = e
