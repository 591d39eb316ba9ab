"""Controller election znodes (Kafka's KafkaZkClient: registerControllerAndIncrementControllerEpoch, getControllerId,
getControllerEpoch).

Contract:
- `elect_controller` creates ephemeral /controller and bumps /controller_epoch in one transaction; it returns
  the new epoch when this broker won (the current one if it already held /controller in this session), None if
  another broker is controller, and records /controller_epoch's znode version in `controller_epoch_zk_version`:
  the version controller writes pass to be fenced (see base.py).
- `watch_controller` is state-style: the current controller id (None when there is none).
"""

from __future__ import annotations

from collections.abc import Callable

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase, log
from broker.metadata.tree import Create, SetData, TransactionFailed
from broker.metadata.types import (
    BadVersionError,
    MetadataError,
    NodeExistsError,
    NoNodeError,
)


class ControllerZnodes(StoreBase):
    """/controller and /controller_epoch."""

    def controller_epoch(self) -> tuple[int, int] | None:
        """(controller epoch, /controller_epoch znode version), or None before the first election."""
        node = self._tree.get(znodes.CONTROLLER_EPOCH)
        return None if node is None else (znodes.decode_controller_epoch(node[0]), node[1])

    def elect_controller(self, broker_id: int) -> int | None:
        """Try to become controller: create ephemeral /controller and bump /controller_epoch atomically.

        Returns the new epoch if this broker won, the current epoch if it already was controller in
        this session, None if another broker is controller.
        """
        stat = self._tree.stat(znodes.CONTROLLER)
        if stat is not None and stat.owned and self.current_controller() == broker_id:
            # Already controller in this session: keep the epoch; no second bump.
            held = self.controller_epoch()
            if held is not None:
                self.controller_epoch_zk_version = held[1]
                return held[0]
        current = self.controller_epoch()
        if current is None:
            try:
                self._tree.create(
                    znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(znodes.INITIAL_CONTROLLER_EPOCH)
                )
                current = (znodes.INITIAL_CONTROLLER_EPOCH, 0)
            except NodeExistsError:
                current = self.controller_epoch()
                if current is None:
                    raise NoNodeError(f"{znodes.CONTROLLER_EPOCH} vanished") from None
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        try:
            versions = self._tree.commit(
                [
                    Create(znodes.CONTROLLER, znodes.encode_controller(broker_id), ephemeral=True),
                    SetData(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(new_epoch), epoch_zk_version),
                ]
            )
        except TransactionFailed as e:
            if not isinstance(e.error, NodeExistsError | BadVersionError):
                raise e.error from None
            # Kafka's checkControllerAndEpoch: we may have won already (a retried request).
            stat = self._tree.stat(znodes.CONTROLLER)
            after = self.controller_epoch()
            if (
                stat is not None
                and stat.owned
                and self.current_controller() == broker_id
                and after is not None
                and after[0] == new_epoch
            ):
                self.controller_epoch_zk_version = after[1]
                return new_epoch
            return None
        self.controller_epoch_zk_version = versions[1]
        return new_epoch

    def current_controller(self) -> int | None:
        node = self._tree.get(znodes.CONTROLLER)
        return None if node is None else znodes.decode_controller(node[0])

    def watch_controller(self, callback: Callable[[int | None], None]) -> None:
        def on_data(data: bytes | None) -> None:
            try:
                controller = None if data is None else znodes.decode_controller(data)
            except MetadataError:
                log.exception("unreadable %s", znodes.CONTROLLER)
                controller = None
            self._deliver(callback, controller)

        self._tree.watch_data(znodes.CONTROLLER, on_data)

    def resign_controller(self, broker_id: int) -> bool:
        """Delete /controller if this session holds it for `broker_id`; True if it did."""
        stat = self._tree.stat(znodes.CONTROLLER)
        if stat is None or not stat.owned or self.current_controller() != broker_id:
            return False
        try:
            self._tree.delete(znodes.CONTROLLER, stat.version)
        except (NoNodeError, BadVersionError):
            return False
        self.controller_epoch_zk_version = None
        return True

