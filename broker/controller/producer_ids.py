"""Producer id allocation for InitProducerId (Kafka's ProducerIdManager), in blocks that never overlap.

Contract: a `ProducerIdManager` hands out producer ids with a synchronous `generate()`, never the same id
twice, not even across restarts, and (in a cluster) never one another broker handed out. Two implementations:
- `FileProducerIdManager`, the embedded default: blocks of `BLOCK_SIZE`; the end of the current block is
  persisted (atomically, fsynced) in a file in the first log directory before any id from it is used.
- `StoreProducerIdManager`, with `zookeeper.connect` (Kafka's ZkProducerIdManager): cluster-wide blocks
  claimed from the metadata store (/latest_producer_id_block, a conditional write), so two brokers never hand
  the same id to two idempotent producers, whose sequence numbers would then clash on a shared partition
  (OUT_OF_ORDER_SEQUENCE_NUMBER, fatal in the client). The next block is claimed in the background when the
  current one is 90% used, so the event loop waits on ZooKeeper only if that has not finished.
A third, asking the controller with AllocateProducerIds (Kafka's RPCProducerIdManager), plugs in behind the
same `generate()`; the controller's side of it is `MetadataStore.allocate_producer_id_block`.
"""

from __future__ import annotations

import concurrent.futures
import os
from pathlib import Path
from typing import Protocol

from broker.metadata import MetadataStore

BLOCK_SIZE = 1000


class ProducerIdManager(Protocol):
    def generate(self) -> int: ...


class FileProducerIdManager:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = 0
        self._block_end = 0
        try:
            self._block_end = int(path.read_text().strip() or 0)
        except FileNotFoundError:
            self._block_end = 0
        except ValueError:
            raise ValueError(f"{path}: not a producer id block end") from None
        self._next = self._block_end

    def generate(self) -> int:
        if self._next >= self._block_end:
            self._persist(self._block_end + BLOCK_SIZE)
        pid = self._next
        self._next += 1
        return pid

    def _persist(self, block_end: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(f"{block_end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._block_end = block_end


class StoreProducerIdManager:
    """Blocks from the metadata store; `start()` claims the first one (a blocking store call: run it on the
    metadata thread). `executor` is that thread, where later claims run in the background."""

    def __init__(self, store: MetadataStore, broker_id: int, executor: concurrent.futures.Executor) -> None:
        self.store = store
        self.broker_id = broker_id
        self.executor = executor
        self._next = 0
        self._last = -1
        self._block_size = 1
        self._pending: concurrent.futures.Future | None = None

    def _claim(self) -> tuple[int, int]:
        return self.store.allocate_producer_id_block(self.broker_id)

    def start(self) -> None:
        self._use(self._claim())

    def _use(self, block: tuple[int, int]) -> None:
        self._next, self._last = block
        self._block_size = max(1, self._last - self._next + 1)

    def generate(self) -> int:
        if self._next > self._last:
            pending, self._pending = self._pending, None
            self._use(pending.result(30) if pending is not None else self._claim())
        pid = self._next
        self._next += 1
        if self._pending is None and self._last - self._next < self._block_size // 10:
            self._pending = self.executor.submit(self._claim)
        return pid
