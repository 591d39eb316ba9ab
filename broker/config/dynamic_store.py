"""Dynamic broker configs in the metadata store, in Kafka's ZooKeeper layout.

Contract:
- `/config/brokers/<broker id>` (per-broker) and `/config/brokers/<default>` (cluster-wide) hold
  ``{"version":1,"config":{"key":"value",...}}``, as Kafka's AdminZkClient writes them; every write is
  followed by a ``/config/changes/config_change_<seq>`` notification ``{"version":2,"entity_path":
  "brokers/<entity>"}``, so Kafka brokers sharing the ZooKeeper apply it too, and so do ours.
- `read(entity)` / `write(entity, props)` are blocking (call them off the event loop); `write` replaces
  the entity's whole set, as Kafka's changeBrokerConfig does.
- `watch(callback)`: `callback(entity)` through `dispatch` for each new broker-config notification
  (entity is "<default>" or a broker id as text). Notifications already present when watching starts
  are skipped (the caller reads the current state after starting the watch); older ones are purged by
  the store's topic-config watcher, as Kafka purges them.
Works on any engine of broker/metadata (ZooKeeper or the local file): it uses the store's znode tree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from broker.metadata import znodes
from broker.metadata.notifications import SequentialNotifications
from broker.metadata.types import MetadataError, NoNodeError

log = logging.getLogger("broker.dynamic_config_store")

DEFAULT_ENTITY = "<default>"
CONFIG_BROKERS = "/config/brokers"


def entity_path(entity: str) -> str:
    return f"{CONFIG_BROKERS}/{entity}"


def write_entity_config(tree: Any, entity_type: str, entity: str, props: Mapping[str, str]) -> None:
    """Replace /config/<entity_type>/<entity> (``{"version":1,"config":{...}}``, as Kafka's AdminZkClient writes
    it) and announce it with a /config/changes notification, so every broker sharing the store applies it."""
    path = f"/config/{entity_type}/{entity}"
    data = znodes.encode_topic_config(props)  # the same {"version":1,"config":{...}} as topic configs
    try:
        tree.set(path, data)
    except NoNodeError:
        tree.create(path, data, makepath=True)
    tree.create(f"{znodes.CONFIG_CHANGES}/{znodes.CONFIG_CHANGE_PREFIX}",
                znodes.encode_config_change(f"{entity_type}/{entity}"), sequential=True)


class BrokerConfigStore:
    def __init__(self, store: Any, dispatch: Callable[[Callable[[], None]], None]) -> None:
        # The store's znode tree: both engines (ZooKeeper, local file) implement the same tree.
        self._tree = store._tree
        self._dispatch = dispatch
        self._notifications: SequentialNotifications | None = None

    def read(self, entity: str) -> dict[str, str]:
        node = self._tree.get(entity_path(entity))
        return {} if node is None else znodes.decode_topic_config(entity_path(entity), node[0])

    def write(self, entity: str, props: Mapping[str, str]) -> None:
        write_entity_config(self._tree, "brokers", entity, props)

    def watch(self, callback: Callable[[str], None]) -> None:
        self._notifications = watch_config_changes(self._tree, "brokers", lambda path: callback(path[0]),
                                                   self._dispatch)

    def close(self) -> None:
        if self._notifications is not None:
            self._notifications.close()


def watch_config_changes(tree: Any, kind: str, callback: Callable[[list[str]], None],
                         dispatch: Callable[[Callable[[], None]], None]) -> SequentialNotifications:
    """Calls `callback(entity path)` through `dispatch` for each new /config/changes notification of `kind`
    ("brokers", "users", "clients"), the path split at "/" without the kind (["alice", "clients", "app"]), each
    path once per batch. Notifications present when watching starts are skipped."""
    def on_new(notifications: list[bytes]) -> None:
        paths: list[list[str]] = []
        for data in notifications:
            try:
                parts = znodes.decode_config_change(data).split("/")
            except MetadataError:
                continue  # the store's own watcher logs unreadable notifications
            if parts[0] == kind and len(parts) > 1 and parts[1] and parts[1:] not in paths:
                paths.append(parts[1:])
        for path in paths:
            try:
                dispatch(lambda path=path: _logged(callback)(path))
            except RuntimeError:
                pass  # the event loop is closed: the broker is shutting down

    notifications = SequentialNotifications(tree, znodes.CONFIG_CHANGES, znodes.CONFIG_CHANGE_PREFIX, on_new,
                                            f"{kind} config changes")
    notifications.start()
    return notifications


def _logged(fn: Callable[..., Any]) -> Callable[..., None]:
    def run(*args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("config change handling failed")

    return run
