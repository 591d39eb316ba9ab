"""The znode-tree contract (tree.py) holds identically on ZooKeeper (KazooTree) and in process (LocalTree)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from broker.metadata.local_tree import LocalTree
from broker.metadata.tree import Check, Create, Delete, SetData, TransactionFailed, ZNodeTree
from broker.metadata.types import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError
from broker.metadata.zk_tree import KazooTree
from tests.zookeeper import chroot_connect


@pytest.fixture(params=["zk", "local"])
def tree(request: pytest.FixtureRequest, tmp_path) -> Iterator[ZNodeTree]:
    if request.param == "zk":
        made: ZNodeTree = KazooTree(chroot_connect(request.getfixturevalue("zookeeper_module")), 2000, 10000)
    else:
        made = LocalTree(tmp_path / "state.json")
    yield made
    made.close()


def test_create_get_set_delete_with_versions(tree):
    assert tree.create("/a", b"1") == "/a"
    assert tree.get("/a") == (b"1", 0)
    with pytest.raises(NodeExistsError):
        tree.create("/a")
    with pytest.raises(NoNodeError):
        tree.create("/missing/child")
    assert tree.create("/deep/er/node", b"x", makepath=True) == "/deep/er/node"
    assert tree.set("/a", b"2", 0) == 1
    with pytest.raises(BadVersionError):
        tree.set("/a", b"3", 0)
    assert tree.set("/a", b"3") == 2
    with pytest.raises(NotEmptyError):
        tree.delete("/deep")
    with pytest.raises(BadVersionError):
        tree.delete("/a", 0)
    tree.delete("/a", 2)
    assert tree.get("/a") is None and tree.stat("/a") is None
    tree.delete("/deep", recursive=True)
    assert tree.children("/deep") is None
    with pytest.raises(NoNodeError):
        tree.delete("/deep")


def test_sequential_nodes_count_from_the_parent(tree):
    tree.create("/seq")
    first = tree.create("/seq/n_", b"", sequential=True)
    second = tree.create("/seq/n_", b"", sequential=True)
    assert first == "/seq/n_0000000000" and second == "/seq/n_0000000001"
    tree.delete(first)
    assert tree.create("/seq/n_", sequential=True) == "/seq/n_0000000002"  # only creations count
    assert sorted(tree.children("/seq")) == ["n_0000000001", "n_0000000002"]


def test_transactions_are_all_or_nothing(tree):
    tree.create("/t", b"0")
    with pytest.raises(TransactionFailed) as failed:
        tree.commit([Create("/t/new", b"x"), SetData("/t", b"1", 0), Check("/t", 5), Delete("/t/new")])
    assert failed.value.index == 2 and isinstance(failed.value.error, BadVersionError)
    assert tree.get("/t") == (b"0", 0) and tree.get("/t/new") is None
    assert tree.commit([Check("/t", 0), Create("/t/new", b"x"), SetData("/t", b"1", 0)]) == [-1, 0, 1]
    assert tree.get("/t/new") == (b"x", 0)
    many = tree.commit_many([[SetData("/t", b"2", 1)], [SetData("/t", b"bad", 1)], [Delete("/t/new", 0)]])
    assert many[0] == [2] and many[2] == [-1]
    assert isinstance(many[1], TransactionFailed) and isinstance(many[1].error, BadVersionError)
    assert tree.get_many(["/t", "/t/new", "/nope"]) == [(b"2", 2), None, None]


def test_ephemeral_nodes_are_owned_and_cannot_have_children(tree):
    tree.create("/e", b"", ephemeral=True)
    stat = tree.stat("/e")
    assert stat is not None and stat.ephemeral and stat.owned
    with pytest.raises(Exception) as raised:
        tree.create("/e/child")
    assert not isinstance(raised.value, AssertionError)


def test_watches_fire_now_and_on_change(tree):
    children: list[list[str]] = []
    data: list[bytes | None] = []
    tree.create("/w")
    tree.watch_children("/w", lambda c: children.append(sorted(c)))
    tree.watch_data("/w/x", data.append)
    tree.create("/w/x", b"1")
    # ZooKeeper re-reads after each trigger, so a create quickly followed by a delete may reach the watcher as
    # one change: see the child before deleting it.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and ["x"] not in children:
        time.sleep(0.02)
    tree.set("/w/x", b"2")
    tree.delete("/w/x")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (children[-1:] != [[]] or data[-1:] != [None] or len(children) < 3):
        time.sleep(0.02)
    assert children[0] == [] and ["x"] in children and children[-1] == []
    # ZooKeeper re-reads after each trigger, so rapid changes may coalesce: intermediate values can
    # be skipped, but the first value is the state at registration and the last is the final state.
    assert data[0] is None and ({b"1", b"2"} & set(data)) and data[-1] is None
