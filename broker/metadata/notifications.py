"""Sequential change notifications in the metadata store, read as Kafka's ZkNodeChangeNotificationListener
reads them.

Contract: `SequentialNotifications(tree, folder, prefix, on_new, what)` watches `folder` for children named
`<prefix><10 digits>` (ZooKeeper's sequential nodes: /config/changes/config_change_*, /kafka-acl-changes/
acl_changes_*, ...). Those present when the watch starts are not new (the caller reads the current state
after starting the watch); afterwards every new one's data is handed, in sequence order, to `on_new(datas)`,
one list per change of the folder, on the watcher's own worker thread (it may block on the tree; it must hand
anything for the event loop over itself). A notification deleted before it is read is skipped; an exception in
`on_new` is logged as `what` failing. `close()` stops delivering. Works on either engine's znode tree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from broker.metadata.tree import ZNodeTree

log = logging.getLogger(__name__)


class SequentialNotifications:
    def __init__(self, tree: ZNodeTree, folder: str, prefix: str, on_new: Callable[[list[bytes]], None],
                 what: str) -> None:
        self._tree = tree
        self._folder = folder
        self._prefix = prefix
        self._on_new = on_new
        self._what = what
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=what.replace(" ", "-"))
        self._closed = False
        self._last_seen: int | None = None  # None until the first call: what exists then is not new

    def start(self) -> None:
        self._tree.watch_children(self._folder, self._on_children)

    def close(self) -> None:
        self._closed = True
        self._worker.shutdown(wait=False)

    def _on_children(self, children: list[str]) -> None:
        if not self._closed:
            self._worker.submit(self._process, list(children))

    def _sequence(self, child: str) -> int | None:
        digits = child[len(self._prefix):]
        return int(digits) if child.startswith(self._prefix) and digits.isdigit() else None

    def _process(self, children: list[str]) -> None:
        try:
            sequences = sorted((seq, child) for child in children if (seq := self._sequence(child)) is not None)
            if self._last_seen is None:
                self._last_seen = sequences[-1][0] if sequences else -1
                return
            datas = []
            for seq, child in sequences:
                if seq <= self._last_seen:
                    continue
                self._last_seen = seq
                node = self._tree.get(f"{self._folder}/{child}")
                if node is not None:
                    datas.append(node[0])
            if datas and not self._closed:
                self._on_new(datas)
        except Exception:
            log.exception("%s handling failed", self._what)
