"""`KazooTree`: the znode tree on a real ZooKeeper ensemble, through kazoo (see tree.py for the contract).

Calls block the calling thread (kazoo's synchronous API); the broker makes them from
`asyncio.to_thread`. Watch callbacks run on kazoo's callback thread. Reads are retried across a
connection loss; writes are not (a retried write could be applied twice), they raise
MetadataUnavailableError and the caller decides. A chroot in the connect string
("host:port/kafka") is created if missing, as Kafka does.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError as KazooBadVersion,
)
from kazoo.exceptions import (
    KazooException,
    RolledBackError,
)
from kazoo.exceptions import (
    NodeExistsError as KazooNodeExists,
)
from kazoo.exceptions import (
    NoNodeError as KazooNoNode,
)
from kazoo.exceptions import (
    NotEmptyError as KazooNotEmpty,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from broker.metadata.tree import ANY_VERSION, Check, Create, Op, SetData, Stat, TransactionFailed, ZNodeTree
from broker.metadata.types import (
    BadVersionError,
    MetadataError,
    MetadataUnavailableError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
)

log = logging.getLogger(__name__)


def _translate(error: BaseException) -> MetadataError:
    if isinstance(error, KazooNodeExists):
        return NodeExistsError(str(error) or "node exists")
    if isinstance(error, KazooNoNode):
        return NoNodeError(str(error) or "no node")
    if isinstance(error, KazooBadVersion):
        return BadVersionError(str(error) or "bad version")
    if isinstance(error, KazooNotEmpty):
        return NotEmptyError(str(error) or "not empty")
    return MetadataUnavailableError(f"{type(error).__name__}: {error}")


def _raise(error: BaseException) -> NoReturn:
    raise _translate(error) from None


class KazooTree(ZNodeTree):
    def __init__(self, connect: str, session_timeout_ms: int = 18000, connection_timeout_ms: int = 18000) -> None:
        hosts, slash, chroot = connect.partition("/")
        if slash and chroot.strip("/"):
            self._ensure_chroot(hosts, "/" + chroot.strip("/"), connection_timeout_ms)
        self._client = KazooClient(
            hosts=connect,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=1.0),
            command_retry=KazooRetry(max_tries=3, delay=0.05, max_delay=0.5),
        )
        self._request_timeout = max(session_timeout_ms, connection_timeout_ms) / 1000
        self._lost = False
        self._renew_callbacks: list[Callable[[], None]] = []
        self._client.add_listener(self._state_listener)
        try:
            self._client.start(timeout=connection_timeout_ms / 1000)
        except (KazooTimeoutError, KazooException) as e:
            self._client.close()
            raise MetadataUnavailableError(f"cannot connect to ZooKeeper at {connect}: {e}") from None
        # kazoo's own exit hook joins its callback thread, which may be blocked on a request to a
        # dead ZooKeeper; stopping the client first fails those requests so the process can exit.
        atexit.register(self.close)

    @staticmethod
    def _ensure_chroot(hosts: str, chroot: str, connection_timeout_ms: int) -> None:
        client = KazooClient(hosts=hosts)
        try:
            client.start(timeout=connection_timeout_ms / 1000)
            client.ensure_path(chroot)
        except (KazooTimeoutError, KazooException) as e:
            raise MetadataUnavailableError(f"cannot create chroot {chroot} on {hosts}: {e}") from None
        finally:
            client.stop()
            client.close()

    @property
    def session_id(self) -> int:
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else 0

    def _state_listener(self, state: str) -> None:
        # Runs on kazoo's connection thread: record, never block.
        if state == KazooState.LOST:
            self._lost = True
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            for callback in list(self._renew_callbacks):
                self._client.handler.spawn(callback)

    def _read(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return self._client.retry(fn, *args)
        except KazooNoNode:
            return None
        except (KazooException, KazooTimeoutError) as e:
            _raise(e)

    def get(self, path: str) -> tuple[bytes, int] | None:
        result = self._read(self._client.get, path)
        if result is None:
            return None
        data, stat = result
        return (data or b""), stat.version

    def stat(self, path: str) -> Stat | None:
        stat = self._read(self._client.exists, path)
        if stat is None:
            return None
        owner = int(stat.ephemeralOwner)
        return Stat(
            version=stat.version,
            czxid=stat.czxid,
            ephemeral=owner != 0,
            owned=owner == self.session_id,
            ctime_ms=int(stat.ctime),
        )

    def children(self, path: str) -> list[str] | None:
        result = self._read(self._client.get_children, path)
        return None if result is None else list(result)

    def create(
        self,
        path: str,
        data: bytes = b"",
        *,
        ephemeral: bool = False,
        sequential: bool = False,
        makepath: bool = False,
    ) -> str:
        try:
            return str(self._client.create(path, data, ephemeral=ephemeral, sequence=sequential, makepath=makepath))
        except (KazooException, KazooTimeoutError) as e:
            _raise(e)

    def set(self, path: str, data: bytes, version: int = ANY_VERSION) -> int:
        try:
            return int(self._client.set(path, data, version=version).version)
        except (KazooException, KazooTimeoutError) as e:
            _raise(e)

    def delete(self, path: str, version: int = ANY_VERSION, *, recursive: bool = False) -> None:
        try:
            self._client.delete(path, version=version, recursive=recursive)
        except (KazooException, KazooTimeoutError) as e:
            _raise(e)

    def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, int] | None]:
        pending = [self._client.get_async(path) for path in paths]
        results: list[tuple[bytes, int] | None] = []
        for path, request in zip(paths, pending, strict=True):
            try:
                data, stat = request.get(timeout=self._request_timeout)
                results.append(((data or b""), stat.version))
            except KazooNoNode:
                results.append(None)
            except (KazooException, KazooTimeoutError):
                results.append(self.get(path))  # retried read
        return results

    def commit_many(self, transactions: Sequence[Sequence[Op]]) -> list[list[int] | TransactionFailed]:
        pending = [self._transaction(ops).commit_async() for ops in transactions]
        results: list[list[int] | TransactionFailed] = []
        for ops, request in zip(transactions, pending, strict=True):
            try:
                raw = request.get(timeout=self._request_timeout)
            except (KazooException, KazooTimeoutError) as e:
                results.append(TransactionFailed(0, ops[0], _translate(e)))
                continue
            try:
                results.append(self._versions(ops, raw))
            except TransactionFailed as e:
                results.append(e)
        return results

    def _transaction(self, ops: Sequence[Op]) -> Any:
        transaction = self._client.transaction()
        for op in ops:
            if isinstance(op, Check):
                transaction.check(op.path, op.version)
            elif isinstance(op, Create):
                transaction.create(op.path, op.data, ephemeral=op.ephemeral)
            elif isinstance(op, SetData):
                transaction.set_data(op.path, op.data, version=op.version)
            else:
                transaction.delete(op.path, version=op.version)
        return transaction

    def commit(self, ops: Sequence[Op]) -> list[int]:
        try:
            results = self._transaction(ops).commit()
        except (KazooException, KazooTimeoutError) as e:
            _raise(e)
        return self._versions(ops, results)

    @staticmethod
    def _versions(ops: Sequence[Op], results: Sequence[Any]) -> list[int]:
        versions: list[int] = []
        for index, (op, result) in enumerate(zip(ops, results, strict=True)):
            if isinstance(result, BaseException):
                if isinstance(result, RolledBackError):
                    continue
                raise TransactionFailed(index, op, _translate(result))
            if isinstance(op, Create):
                versions.append(0)
            elif isinstance(op, SetData):
                versions.append(int(result.version))
            else:
                versions.append(-1)
        if len(versions) != len(ops):
            # Every op rolled back without naming a culprit; ZooKeeper does not do this, but be typed.
            raise TransactionFailed(0, ops[0], MetadataUnavailableError("transaction rolled back"))
        return versions

    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> None:
        def on_children(children: list[str]) -> None:
            try:
                callback(list(children))
            except Exception:
                log.exception("children watch callback for %s failed", path)

        ChildrenWatch(self._client, path, on_children)

    def watch_data(self, path: str, callback: Callable[[bytes | None], None]) -> None:
        def on_data(data: bytes | None, stat: object) -> None:
            try:
                callback(None if stat is None else (data or b""))
            except Exception:
                log.exception("data watch callback for %s failed", path)

        DataWatch(self._client, path, on_data)

    def on_session_renewed(self, callback: Callable[[], None]) -> None:
        self._renew_callbacks.append(callback)

    def close(self) -> None:
        atexit.unregister(self.close)
        try:
            self._client.stop()
        finally:
            self._client.close()
