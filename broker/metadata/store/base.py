"""What every znode family of the metadata store shares: the tree, watch delivery, fencing, lifecycle.

Contract:
- `StoreBase` holds the `ZNodeTree` (ZooKeeper or local engine) and is the base of each family's mixin
  (brokers.py, topics.py, configs.py, partitions.py, admin_requests.py, producer_ids.py); engines.py puts
  them together as `TreeMetadataStore`.
- `_deliver(callback, value)` hands a watch value to the `dispatch` callable (the broker passes
  `loop.call_soon_threadsafe`), never calling back on the engine's thread; a failing callback is logged.
- `_submit(fn)` runs blocking notification handling (reads and deletes of znodes) on the store's own
  worker thread, off kazoo's callback thread.
- `_fenced(ops, controller_epoch_zk_version)` prefixes a controller write with a check of
  /controller_epoch's version, so a replaced controller changes nothing; `_fence_failed` recognises that
  failure (Kafka's checkControllerEpochZkVersion).
- `close()` ends the session (ephemeral nodes go) and stops delivering watches.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from broker.metadata import znodes
from broker.metadata.tree import Check, Op, TransactionFailed, ZNodeTree
from broker.metadata.types import BadVersionError, NoNodeError

log = logging.getLogger("broker.metadata.store")

Dispatch = Callable[[Callable[[], None]], None]
T = TypeVar("T")


def _direct(fn: Callable[[], None]) -> None:
    fn()


class StoreBase:
    """The tree, the dispatcher, the notification worker and the controller fence; see the module docstring."""

    def __init__(self, tree: ZNodeTree, dispatch: Dispatch | None = None) -> None:
        self._tree = tree
        self._dispatch = dispatch or _direct
        # Notification handling reads and deletes znodes: blocking work kept off kazoo's callback thread.
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metadata-notifications")
        self._closed = False
        self.controller_epoch_zk_version: int | None = None

    def _deliver(self, callback: Callable[[T], None], value: T) -> None:
        if self._closed:
            return

        def run() -> None:
            try:
                callback(value)
            except Exception:
                log.exception("metadata watch callback %r failed", callback)

        try:
            self._dispatch(run)
        except RuntimeError:
            log.debug("dispatch refused a metadata watch callback (event loop closed)")

    def _submit(self, fn: Callable[[], None]) -> None:
        if self._closed:
            return

        def run() -> None:
            try:
                fn()
            except Exception:
                log.exception("metadata notification processing failed")

        try:
            self._worker.submit(run)
        except RuntimeError:
            pass  # worker shut down by close()

    @staticmethod
    def _fenced(ops: list[Op], controller_epoch_zk_version: int | None) -> list[Op]:
        if controller_epoch_zk_version is None:
            return ops
        return [Check(znodes.CONTROLLER_EPOCH, controller_epoch_zk_version), *ops]

    @staticmethod
    def _fence_failed(error: TransactionFailed, fenced: bool) -> bool:
        return fenced and error.index == 0 and isinstance(error.error, BadVersionError | NoNodeError)

    def watch_session_renewed(self, callback: Callable[[], None]) -> None:
        """`callback()` after the ZooKeeper session expired and a new one began: ephemeral nodes of
        the old session are gone (the store has already re-registered the broker; /controller is
        not re-created, so a controller must treat this as resignation and run for election again,
        as Kafka's controller does). Never fires on the local engine."""

        def renewed() -> None:
            self._deliver(lambda _: callback(), None)

        self._tree.on_session_renewed(renewed)

    def close(self) -> None:
        """End the session (ephemeral nodes go away) and stop delivering watches."""
        if self._closed:
            return
        self._closed = True
        self._worker.shutdown(wait=False, cancel_futures=True)
        self._tree.close()
