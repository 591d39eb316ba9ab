"""Producer id allocation for InitProducerId (Kafka's ProducerIdManager), in blocks that never overlap.

Contract: a `ProducerIdManager` (the transaction coordinator's protocol, in
broker/coordinator/transaction/producer_id_manager.py) hands out producer ids with a synchronous `generate()`,
never the same id twice, not even across restarts, and (in a cluster) never one another broker handed out. Two
implementations:
- `FileProducerIdManager`, the embedded default: blocks of `BLOCK_SIZE`; the end of the current block is
  persisted (atomically, fsynced) in a file in the first log directory before any id from it is used.
- `StoreProducerIdManager`, with `zookeeper.connect` (Kafka's ZkProducerIdManager): cluster-wide blocks
  claimed from the metadata store (/latest_producer_id_block, a conditional write), so two brokers never hand
  the same id to two idempotent producers, whose sequence numbers would then clash on a shared partition
  (OUT_OF_ORDER_SEQUENCE_NUMBER, fatal in the client). The next block is claimed in the background when the
  current one is 90% used, so the event loop waits on ZooKeeper only if that has not finished.
- `RpcProducerIdManager`, with `zookeeper.connect` at inter.broker.protocol.version 3.0 or later (Kafka's
  RPCProducerIdManager): blocks are asked of the active controller with AllocateProducerIds (over the wire, or
  directly when this broker is the controller), which claims them from the same znode. `generate()` never
  waits: with no id left it raises `ProducerIdsUnavailable` (InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS
  and the client retries, as with Kafka) while a background task asks for the next block, retrying with
  backoff until the controller answers. The first block is asked for at start-up, the next one when the
  current block is 90% used.
The controller's side of AllocateProducerIds is `Controller.allocate_producer_ids`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from broker.controller.controller_client import ControllerClient, ControllerUnavailable
from broker.coordinator.transaction.producer_id_manager import ProducerIdsUnavailable
from broker.metadata.store import MetadataStore
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.producer_ids")

BLOCK_SIZE = 1000


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


MAX_PRODUCER_ID = (1 << 63) - 1
RPC_BACKOFF_S = 0.1
MAX_RPC_BACKOFF_S = 2.0


class RpcProducerIdManager:
    """Blocks from the active controller (AllocateProducerIds); see the module docstring."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self._next = 0
        self._last = -1
        self._block_size = 1
        self._pending: tuple[int, int] | None = None
        self._task: asyncio.Task | None = None
        self._client = ControllerClient(controller.server, "producer-ids")

    def start(self) -> None:
        self._request()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.wait({task})
        self._client.reset()

    def generate(self) -> int:
        if self._next > self._last:
            if self._pending is None:
                self._request()
                raise ProducerIdsUnavailable("producer id block is full; waiting for the controller's next block")
            (self._next, self._last), self._pending = self._pending, None
            self._block_size = self._last - self._next + 1
        pid = self._next
        self._next += 1
        if self._pending is None and self._last - self._next < self._block_size // 10:
            self._request()
        return pid

    def _request(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._fetch_block())

    async def _fetch_block(self) -> None:
        backoff = RPC_BACKOFF_S
        while True:
            try:
                start, length = await self._ask_controller()
                if start < 0 or length <= 0 or start > MAX_PRODUCER_ID - length + 1:
                    raise ValueError(f"invalid producer id block start {start} length {length}")
                self._pending = (start, start + length - 1)
                return
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("AllocateProducerIds failed (%s); retrying", e)
                self._client.reset()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_RPC_BACKOFF_S)

    async def _ask_controller(self) -> tuple[int, int]:
        controller = self.controller
        epoch = controller.store.broker_epoch
        if controller.active:
            return await controller.allocate_producer_ids(controller.broker_id, epoch)
        resp = await self._client.send(lambda v: request_class(ApiKey.ALLOCATE_PRODUCER_IDS)[v](
            broker_id=controller.broker_id, broker_epoch=epoch), ApiKey.ALLOCATE_PRODUCER_IDS)
        if resp.error_code != ErrorCode.NONE:
            raise ControllerUnavailable(f"the controller answered {ErrorCode(resp.error_code).name}")
        return resp.producer_id_start, resp.producer_id_len
