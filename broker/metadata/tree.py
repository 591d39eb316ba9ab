"""The znode tree a metadata store engine provides: ZooKeeper's data model, minus everything we do not use.

Contract (both engines, `KazooTree` and `LocalTree`, implement it identically):
- Nodes have bytes data and a version that starts at 0 and increments on every `set`.
- `create` fails with NodeExistsError if the node exists and NoNodeError if the parent does not
  (unless `makepath`); `sequential` appends a 10-digit counter taken from the parent, as ZooKeeper does.
- `set`/`delete` with `version >= 0` fail with BadVersionError unless it is the current version.
- `commit(ops)` applies Check/Create/SetData/Delete atomically: all or nothing. On failure it raises
  `TransactionFailed` carrying the index of the op that failed and the typed error.
- `watch_children(path, cb)` / `watch_data(path, cb)` call `cb` once now with the current value and
  again after changes, on a thread of the engine; callbacks must not block. ZooKeeper watches are
  one-shot and re-armed by a read, so rapid changes may coalesce: intermediate values can be
  skipped, but the last value delivered is the current state. A missing node
  is reported as data None or children [] (the children watch re-arms when the node appears
  only for the local engine; callers create the watched parents first).
- Ephemeral nodes live as long as this tree's session (its `close()`, or a ZooKeeper session expiry).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from broker.metadata.types import MetadataError, NodeExistsError

ANY_VERSION = -1


@dataclass(frozen=True, slots=True)
class Check:
    path: str
    version: int


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = ANY_VERSION


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = ANY_VERSION


Op = Check | Create | SetData | Delete


class TransactionFailed(MetadataError):
    """`commit` rolled back: `ops[index]` failed with `error`."""

    def __init__(self, index: int, op: Op, error: MetadataError) -> None:
        super().__init__(f"transaction op {index} {op!r} failed: {error!r}")
        self.index = index
        self.op = op
        self.error = error


@dataclass(frozen=True, slots=True)
class Stat:
    version: int
    czxid: int  # creation order; a registered broker's epoch
    ephemeral: bool
    owned: bool  # ephemeral and owned by this tree's session
    ctime_ms: int = 0


class ZNodeTree(ABC):
    @abstractmethod
    def get(self, path: str) -> tuple[bytes, int] | None:
        """(data, version), or None if there is no node."""

    @abstractmethod
    def stat(self, path: str) -> Stat | None: ...

    @abstractmethod
    def children(self, path: str) -> list[str] | None:
        """Child names (unsorted), or None if there is no node."""

    @abstractmethod
    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create the node and return its path (with the sequence suffix if `sequential`)."""

    @abstractmethod
    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> int:
        """Replace the data and return the new version."""

    @abstractmethod
    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        """Delete the node; NoNodeError if it does not exist."""

    @abstractmethod
    def commit(self, ops: Sequence[Op]) -> list[int]:
        """Apply `ops` atomically; returns per op the resulting version (Create/SetData) or -1."""

    def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, int] | None]:
        """`get` for each path; engines with a network round trip pipeline the requests."""
        return [self.get(path) for path in paths]

    def commit_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[int] | TransactionFailed]:
        """`commit` each transaction independently (each atomic, not all together); failures are
        returned in place, not raised. Engines with a network round trip pipeline them."""
        results: list[list[int] | TransactionFailed] = []
        for ops in transactions:
            try:
                results.append(self.commit(ops))
            except TransactionFailed as e:
                results.append(e)
        return results

    @abstractmethod
    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> None: ...

    @abstractmethod
    def watch_data(self, path: str, callback: Callable[[bytes | None], None]) -> None: ...

    @abstractmethod
    def on_session_renewed(self, callback: Callable[[], None]) -> None:
        """`callback` runs (on an engine thread) after the session expired and a new one began."""

    @abstractmethod
    def close(self) -> None:
        """End the session: ephemeral nodes go away, watches stop."""

    def ensure_paths(self, paths: Sequence[str]) -> None:
        """`ensure_path` for each of `paths`; a tree may create them all in one write (LocalTree does)."""
        for path in paths:
            self.ensure_path(path)

    def ensure_path(self, path: str) -> None:
        """Create `path` and its missing parents with empty data; existing nodes are left alone."""
        parts = [p for p in path.split("/") if p]
        current = ""
        for part in parts:
            current += "/" + part
            if self.stat(current) is None:
                try:
                    self.create(current)
                except NodeExistsError:
                    pass  # created concurrently by another broker
