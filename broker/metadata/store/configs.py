"""Topic config znodes and their change notifications (Kafka's AdminZkClient.changeTopicConfig and
ZkNodeChangeNotificationListener on /config/changes).

Contract:
- `set_topic_configs` replaces a topic's overrides in /config/topics/<name> and announces the change with a
  sequential /config/changes/config_change_ node.
- `watch_config_changes` is notification-style: each new notification is delivered once (the topic names of a
  batch); notifications present at registration are processed too, and those older than 15 minutes are
  purged, as Kafka's listener does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase, log
from broker.metadata.types import (
    MetadataError,
    NoNodeError,
    UnknownTopicError,
)

# Kafka's ZkNodeChangeNotificationListener purges config change notifications after 15 minutes.
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def _sequence(name: str, prefix: str) -> int | None:
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix) :]
    return int(digits) if znodes.is_decimal(digits) else None


class ConfigZnodes(StoreBase):
    """/config/topics/<topic> and /config/changes."""

    def topic_configs(self, name: str) -> dict[str, str]:
        node = self._tree.get(znodes.topic_config_path(name))
        return {} if node is None else znodes.decode_topic_config(name, node[0])

    def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's overrides and announce it with a config change notification."""
        if self._tree.stat(znodes.topic_path(name)) is None:
            raise UnknownTopicError(name)
        path = znodes.topic_config_path(name)
        data = znodes.encode_topic_config(configs)
        try:
            self._tree.set(path, data)
        except NoNodeError:
            self._tree.create(path, data, makepath=True)
        self._tree.create(
            f"{znodes.CONFIG_CHANGES}/{znodes.CONFIG_CHANGE_PREFIX}",
            znodes.encode_config_change(f"topics/{name}"),
            sequential=True,
        )

    def watch_config_changes(self, callback: Callable[[list[str]], None]) -> None:
        """`callback(topic_names)` for each batch of new topic config change notifications.

        As Kafka's listener does, notifications present at registration are processed too, and
        notifications older than 15 minutes are purged.
        """

        last_seen = -1

        def process(children: list[str]) -> None:
            nonlocal last_seen
            topics: list[str] = []
            newest = last_seen
            for child in sorted(children):
                seq = _sequence(child, znodes.CONFIG_CHANGE_PREFIX)
                if seq is None or seq <= last_seen:
                    continue
                newest = max(newest, seq)
                node = self._tree.get(f"{znodes.CONFIG_CHANGES}/{child}")
                if node is None:
                    continue
                try:
                    entity_path = znodes.decode_config_change(node[0])
                except MetadataError:
                    log.warning("ignoring unreadable config change %s", child)
                    continue
                entity_type, _, entity = entity_path.partition("/")
                if entity_type == "topics" and entity and entity not in topics:
                    topics.append(entity)
            last_seen = newest
            self._purge_config_changes(children)
            if topics:
                self._deliver(callback, topics)

        self._tree.watch_children(znodes.CONFIG_CHANGES, lambda children: self._submit(lambda: process(children)))

    def _purge_config_changes(self, children: list[str]) -> None:
        cutoff = time.time() * 1000 - CONFIG_CHANGE_EXPIRATION_MS
        for child in children:
            path = f"{znodes.CONFIG_CHANGES}/{child}"
            stat = self._tree.stat(path)
            if stat is not None and stat.ctime_ms < cutoff:
                try:
                    self._tree.delete(path)
                except NoNodeError:
                    pass

