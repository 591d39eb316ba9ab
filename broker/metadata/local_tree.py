"""`LocalTree`: the znode tree in process memory, persisted to one JSON file (see tree.py for the contract).

The embedded default engine for a single broker without `zookeeper.connect`. Persistent nodes are
written to `path` after every change, atomically (`.tmp`, fsync, rename, fsync of the directory),
so a crash leaves either the old or the new state. Ephemeral nodes live until `close()` and are
never written. Watches fire synchronously on the thread that made the change, while the tree's
lock is held: callbacks must only hand work off (the store dispatches them to the event loop).

File format (version 1): {"format":1,"next_czxid":N,"znodes":{"/path":{"data":"<utf-8 text>",
"version":V,"cversion":C,"czxid":Z,"ctime_ms":T}}}; data that is not UTF-8 is stored as "data_b64".
"""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.metadata.tree import (
    ANY_VERSION,
    Check,
    Create,
    Delete,
    Op,
    SetData,
    Stat,
    TransactionFailed,
    ZNodeTree,
)
from broker.metadata.types import (
    BadVersionError,
    MetadataCorruptError,
    MetadataError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)

MAX_STATE_FILE_BYTES = 256 << 20


@dataclass(slots=True)
class _Node:
    data: bytes
    version: int
    cversion: int
    czxid: int
    ephemeral: bool
    ctime_ms: int = 0


def _parent(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"


def _check_path(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise MetadataError(f"invalid znode path {path!r}")


class LocalTree(ZNodeTree):
    def __init__(self, state_file: str | os.PathLike[str]) -> None:
        self._file = Path(state_file)
        self._lock = threading.RLock()
        self._nodes: dict[str, _Node] = {"/": _Node(b"", 0, 0, 0, False)}
        self._next_czxid = 1
        self._closed = False
        self._children: dict[str, set[str]] = {"/": set()}
        self._child_watches: dict[str, list[Callable[[list[str]], None]]] = {}
        self._data_watches: dict[str, list[Callable[[bytes | None], None]]] = {}
        if self._file.exists():
            self._load()

    # --- persistence ---------------------------------------------------------------------------

    def _load(self) -> None:
        size = self._file.stat().st_size
        if size > MAX_STATE_FILE_BYTES:
            raise MetadataCorruptError(f"{self._file}: {size} bytes exceeds {MAX_STATE_FILE_BYTES}")
        try:
            state = json.loads(self._file.read_text("utf-8"))
            if not isinstance(state, dict) or state.get("format") != 1:
                raise ValueError("unknown format")
            next_czxid = state["next_czxid"]
            znodes = state["znodes"]
            if not isinstance(next_czxid, int) or not isinstance(znodes, dict):
                raise ValueError("bad header")
            nodes: dict[str, _Node] = {}
            for path, raw in znodes.items():
                _check_path(path)
                if "data_b64" in raw:
                    data = base64.b64decode(raw["data_b64"], validate=True)
                else:
                    data = str(raw["data"]).encode("utf-8")
                version, cversion, czxid = raw["version"], raw["cversion"], raw["czxid"]
                ctime_ms = raw.get("ctime_ms", 0)
                if not all(isinstance(v, int) and v >= 0 for v in (version, cversion, czxid, ctime_ms)):
                    raise ValueError(f"bad counters for {path}")
                nodes[path] = _Node(data, version, cversion, czxid, False, ctime_ms)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, MetadataError) as e:
            raise MetadataCorruptError(f"{self._file}: {type(e).__name__}: {e}") from None
        nodes.setdefault("/", _Node(b"", 0, 0, 0, False))
        for path in nodes:
            if path != "/" and _parent(path) not in nodes:
                raise MetadataCorruptError(f"{self._file}: {path} has no parent")
        self._nodes = nodes
        self._children = {path: set() for path in nodes}
        for path in nodes:
            if path != "/":
                self._children[_parent(path)].add(path.rsplit("/", 1)[1])
        self._next_czxid = max(next_czxid, 1 + max(n.czxid for n in nodes.values()))

    def _persist(self) -> None:
        znodes: dict[str, Any] = {}
        for path, node in sorted(self._nodes.items()):
            if node.ephemeral:
                continue
            entry: dict[str, Any] = {
                "version": node.version,
                "cversion": node.cversion,
                "czxid": node.czxid,
                "ctime_ms": node.ctime_ms,
            }
            try:
                entry["data"] = node.data.decode("utf-8")
            except UnicodeDecodeError:
                entry["data_b64"] = base64.b64encode(node.data).decode("ascii")
            znodes[path] = entry
        payload = json.dumps({"format": 1, "next_czxid": self._next_czxid, "znodes": znodes}, separators=(",", ":"))
        self._file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._file.with_name(self._file.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._file)
        dir_fd = os.open(self._file.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    # --- reads ---------------------------------------------------------------------------------

    def get(self, path: str) -> tuple[bytes, int] | None:
        with self._lock:
            node = self._nodes.get(path)
            return None if node is None else (node.data, node.version)

    def stat(self, path: str) -> Stat | None:
        with self._lock:
            node = self._nodes.get(path)
            if node is None:
                return None
            return Stat(node.version, node.czxid, node.ephemeral, node.ephemeral, node.ctime_ms)

    def _children_of(self, path: str) -> list[str]:
        return list(self._children.get(path, ()))

    def children(self, path: str) -> list[str] | None:
        with self._lock:
            if path not in self._nodes:
                return None
            return self._children_of(path)

    # --- writes: validate everything first, then apply, so a transaction is all-or-nothing -------

    def _validate(self, op: Op, created: set[str], deleted: set[str]) -> None:
        def exists(p: str) -> bool:
            return (p in self._nodes and p not in deleted) or p in created

        if isinstance(op, Create):
            _check_path(op.path)
            if exists(op.path):
                raise NodeExistsError(op.path)
            parent = _parent(op.path)
            if not exists(parent):
                raise NoNodeError(parent)
            if parent in self._nodes and self._nodes[parent].ephemeral:
                raise MetadataError(f"ephemeral {parent} cannot have children")
            created.add(op.path)
            deleted.discard(op.path)
            return
        if not exists(op.path):
            raise NoNodeError(op.path)
        node = self._nodes.get(op.path)
        # A node created earlier in the same transaction has version 0.
        current = 0 if op.path in created else (node.version if node else 0)
        if op.version != ANY_VERSION and op.version != current:
            raise BadVersionError(f"{op.path}: expected version {op.version}, current {current}")
        if isinstance(op, Check | SetData):
            return
        if any(exists(c) for c in self._children_path_set(op.path, created)):
            raise NotEmptyError(op.path)
        deleted.add(op.path)
        created.discard(op.path)

    def _children_path_set(self, path: str, created: set[str]) -> list[str]:
        prefix = path + "/"
        existing = [prefix + child for child in self._children.get(path, ())]
        return existing + [p for p in created if _parent(p) == path]

    def _apply(self, op: Op, events: set[tuple[str, str]]) -> int:
        if isinstance(op, Check):
            return -1
        if isinstance(op, Create):
            self._nodes[op.path] = _Node(op.data, 0, 0, self._next_czxid, op.ephemeral, int(time.time() * 1000))
            self._next_czxid += 1
            parent = _parent(op.path)
            self._nodes[parent].cversion += 1
            self._children[parent].add(op.path.rsplit("/", 1)[1])
            self._children[op.path] = set()
            events.update({("data", op.path), ("children", parent)})
            return 0
        if isinstance(op, SetData):
            node = self._nodes[op.path]
            node.data = op.data
            node.version += 1
            events.add(("data", op.path))
            return node.version
        del self._nodes[op.path]
        del self._children[op.path]
        parent = _parent(op.path)
        # As ZooKeeper since ZOOKEEPER-1046, only creations advance the parent's cversion, so
        # sequential names never repeat.
        self._children[parent].discard(op.path.rsplit("/", 1)[1])
        events.update({("data", op.path), ("children", parent), ("children", op.path)})
        return -1

    def _run(self, ops: Sequence[Op], in_transaction: bool, events: set[tuple[str, str]]) -> list[int]:
        """Validate then apply one transaction in memory (caller holds the lock and persists)."""
        if self._closed:
            raise MetadataError("tree is closed")
        created: set[str] = set()
        deleted: set[str] = set()
        for index, op in enumerate(ops):
            try:
                self._validate(op, created, deleted)
            except MetadataError as e:
                if in_transaction:
                    raise TransactionFailed(index, op, e) from None
                raise
        return [self._apply(op, events) for op in ops]

    @staticmethod
    def _touches_persistent(ops: Sequence[Op]) -> bool:
        return any(not isinstance(op, Check) and not (isinstance(op, Create) and op.ephemeral) for op in ops)

    def _persist_or_raise(self) -> None:
        try:
            self._persist()
        except OSError as e:
            raise MetadataError(f"cannot write {self._file}: {e}") from e

    def _mutate(self, ops: Sequence[Op], in_transaction: bool) -> list[int]:
        with self._lock:
            events: set[tuple[str, str]] = set()
            results = self._run(ops, in_transaction, events)
            if self._touches_persistent(ops):
                self._persist_or_raise()
            self._fire(events)
            return results

    def commit_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[int] | TransactionFailed]:
        # One file write for the whole batch: a controller creating or moving 1000 partitions
        # would otherwise rewrite and fsync the state file 1000 times.
        with self._lock:
            events: set[tuple[str, str]] = set()
            results: list[list[int] | TransactionFailed] = []
            persist = False
            for ops in transactions:
                try:
                    results.append(self._run(ops, True, events))
                    persist = persist or self._touches_persistent(ops)
                except TransactionFailed as e:
                    results.append(e)
            if persist:
                self._persist_or_raise()
            self._fire(events)
            return results

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        with self._lock:
            if makepath:
                self.ensure_path(_parent(path))
            if sequential:
                parent = self._nodes.get(_parent(path))
                if parent is None:
                    raise NoNodeError(_parent(path))
                path = f"{path}{parent.cversion:010d}"
            self._mutate([Create(path, data, ephemeral)], in_transaction=False)
            return path

    def ensure_paths(self, paths: Sequence[str]) -> None:
        # A new single-node broker creates its store's ~17 persistent paths before it serves: one write and fsync of
        # the state file for all of them, not one each (38 fsyncs were 0.35 s of a start-up on a busy disk).
        with self._lock:
            missing: list[str] = []
            for path in paths:
                current = ""
                for part in (p for p in path.split("/") if p):
                    current += "/" + part
                    if current not in self._nodes and current not in missing:
                        missing.append(current)  # parents before their children
            if missing:
                self.commit_many([[Create(path)] for path in missing])

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> int:
        return self._mutate([SetData(path, data, version)], in_transaction=False)[0]

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        with self._lock:
            if recursive:
                if path not in self._nodes:
                    raise NoNodeError(path)
                for child in self._children_of(path):
                    self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
            self._mutate([Delete(path, version)], in_transaction=False)

    def commit(self, ops: Sequence[Op]) -> list[int]:
        return self._mutate(ops, in_transaction=True)

    # --- watches -------------------------------------------------------------------------------

    def _fire(self, events: set[tuple[str, str]]) -> None:
        for kind, path in sorted(events):
            if kind == "children":
                for callback in list(self._child_watches.get(path, ())):
                    callback(self._children_of(path) if path in self._nodes else [])
            else:
                node = self._nodes.get(path)
                for data_callback in list(self._data_watches.get(path, ())):
                    data_callback(None if node is None else node.data)

    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> None:
        with self._lock:
            self._child_watches.setdefault(path, []).append(callback)
            callback(self._children_of(path) if path in self._nodes else [])

    def watch_data(self, path: str, callback: Callable[[bytes | None], None]) -> None:
        with self._lock:
            self._data_watches.setdefault(path, []).append(callback)
            node = self._nodes.get(path)
            callback(None if node is None else node.data)

    def on_session_renewed(self, callback: Callable[[], None]) -> None:
        pass  # the in-process session never expires

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._child_watches.clear()
            self._data_watches.clear()
            for path in [p for p, n in self._nodes.items() if n.ephemeral]:
                del self._nodes[path]
