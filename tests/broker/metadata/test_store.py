"""MetadataStore behaviour on both engines: a real ZooKeeper (kazoo) and the local JSON-file engine.

Tests parametrized over `engine` assert the behaviour both engines share; the ZooKeeper-only tests
cover what needs several sessions (ephemeral registration, controller election between brokers,
fencing of a replaced controller) and that the znodes read back through a plain kazoo client hold
Kafka's JSON.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from broker.metadata import (
    BadVersionError,
    BrokerIdInUseError,
    ControllerMovedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    LeaderAndIsr,
    MetadataCorruptError,
    NodeExistsError,
    PartitionStateExistsError,
    TopicExistsError,
    UnknownTopicError,
)
from broker.metadata.store import LOCAL_STATE_FILE, LocalMetadataStore, TreeMetadataStore, ZkMetadataStore
from broker.metadata.znodes import topic_id_to_string
from storage.values import TopicPartition
from tests.zookeeper import ZooKeeperServer, chroot_connect

REPO = Path(__file__).resolve().parents[3]


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


class Recorder:
    """A dispatch callable that runs callbacks on its own thread, like loop.call_soon_threadsafe."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self.threads: set[int] = set()
        self._lock = threading.Lock()

    def dispatch(self, fn: Callable[[], None]) -> None:
        # Run later on a fresh thread: the store must not rely on the callback running inline.
        thread = threading.Thread(target=self._run, args=(fn,))
        thread.start()
        thread.join()

    def _run(self, fn: Callable[[], None]) -> None:
        with self._lock:
            self.threads.add(threading.get_ident())
            fn()

    def __call__(self, value: Any) -> None:
        self.values.append(value)


@pytest.fixture
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., TreeMetadataStore]]:
    engine = request.param
    stores: list[TreeMetadataStore] = []
    connect = None

    def make(dispatch: Callable[[Callable[[], None]], None] | None = None) -> TreeMetadataStore:
        nonlocal connect
        if engine == "zk":
            server: ZooKeeperServer = request.getfixturevalue("zookeeper_module")
            connect = connect or chroot_connect(server)
            store: TreeMetadataStore = ZkMetadataStore(connect, session_timeout_ms=1000, dispatch=dispatch)
        else:
            store = LocalMetadataStore(tmp_path / "logs", dispatch=dispatch)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


both_engines = pytest.mark.parametrize("make_store", ["zk", "local"], indirect=True)


# --- behaviour shared by both engines --------------------------------------------------------------


@both_engines
def test_cluster_id_is_created_once(make_store):
    store = make_store()
    cluster_id = store.get_or_create_cluster_id()
    assert len(cluster_id) == 22
    assert store.get_or_create_cluster_id() == cluster_id


@both_engines
def test_broker_registration_and_watch(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.watch_brokers(recorder)
    epoch = store.register_broker(1, ["PLAINTEXT://127.0.0.1:9092"], rack="r1")
    assert epoch > 0
    brokers = store.live_brokers()
    assert list(brokers) == [1]
    assert brokers[1].endpoint() == ("127.0.0.1", 9092) and brokers[1].rack == "r1"
    wait_for(lambda: recorder.values and recorder.values[-1] == frozenset({1}))
    assert recorder.values[0] == frozenset()  # fired at registration with the current value
    assert threading.get_ident() not in recorder.threads
    # Re-registering in the same session updates the node instead of failing.
    assert store.register_broker(1, ["PLAINTEXT://127.0.0.1:9093"]) == epoch
    assert store.live_brokers()[1].endpoint() == ("127.0.0.1", 9093)


@both_engines
def test_controller_election_increments_epoch_and_fences(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.watch_controller(recorder)
    assert store.current_controller() is None and store.controller_epoch() is None
    assert store.elect_controller(1) == 1
    assert store.current_controller() == 1
    assert store.controller_epoch() == (1, 1)
    fence = store.controller_epoch_zk_version
    assert fence == 1
    assert store.elect_controller(2) is None  # someone holds /controller
    assert store.elect_controller(1) == 1 and store.controller_epoch() == (1, 1)  # no second bump
    wait_for(lambda: recorder.values[-1:] == [1])
    store.create_topic("fenced", uuid.uuid4(), {0: [1]})
    store.create_partition_state("fenced", 0, LeaderAndIsr(1, 0, (1,), 1), controller_epoch_zk_version=fence)
    # Resign and re-elect: epoch 2, the old zk version no longer fences anything in.
    assert store.resign_controller(1)
    wait_for(lambda: recorder.values[-1:] == [None])
    assert store.elect_controller(1) == 2
    with pytest.raises(ControllerMovedError):
        store.update_partition_state("fenced", 0, LeaderAndIsr(1, 1, (1,), 1), 0, controller_epoch_zk_version=fence)
    assert store.partition_state("fenced", 0)[0].leader_epoch == 0  # nothing was written
    new_version = store.update_partition_state(
        "fenced", 0, LeaderAndIsr(1, 1, (1,), 2), 0, controller_epoch_zk_version=store.controller_epoch_zk_version
    )
    assert new_version == 1


@both_engines
def test_topic_creation_configs_and_validation(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.watch_topics(recorder)
    topic_id = uuid.uuid4()
    store.create_topic("orders", topic_id, {0: [1, 2], 1: [2, 1]}, {"min.insync.replicas": "2"})
    info = store.topics()["orders"]
    assert info.topic_id == topic_id and info.assignment == {0: (1, 2), 1: (2, 1)}
    assert store.topic_configs("orders") == {"min.insync.replicas": "2"}
    wait_for(lambda: recorder.values[-1:] == [frozenset({"orders"})])
    with pytest.raises(TopicExistsError):
        store.create_topic("orders", uuid.uuid4(), {0: [1]})
    for bad_name in ("", ".", "..", "a/b", "x" * 250, "sp ace"):
        with pytest.raises(InvalidTopicError):
            store.create_topic(bad_name, uuid.uuid4(), {0: [1]})
    for bad in ({}, {1: [1]}, {0: []}, {0: [1, 1]}):
        with pytest.raises(InvalidReplicaAssignmentError):
            store.create_topic("bad", uuid.uuid4(), bad)
    assert store.topic("bad") is None
    # CreatePartitions keeps the topic id.
    version = store.set_assignment("orders", {0: [1, 2], 1: [2, 1], 2: [1, 2]})
    assert version == info.zk_version + 1
    assert store.topic("orders").assignment[2] == (1, 2) and store.topic("orders").topic_id == topic_id
    with pytest.raises(BadVersionError):
        store.set_assignment("orders", {0: [1]}, expected_version=info.zk_version)
    with pytest.raises(UnknownTopicError):
        store.set_assignment("missing", {0: [1]})


@both_engines
def test_partition_state_conditional_update(make_store):
    store = make_store()
    store.create_topic("t", uuid.uuid4(), {0: [1, 2, 3]})
    assert store.partition_state("t", 0) is None
    state = LeaderAndIsr(leader=1, leader_epoch=0, isr=(1, 2, 3), controller_epoch=1)
    assert store.create_partition_state("t", 0, state) == 0
    with pytest.raises(PartitionStateExistsError):
        store.create_partition_state("t", 0, state)
    with pytest.raises(UnknownTopicError):
        store.create_partition_state("nope", 0, state)
    read, version = store.partition_state("t", 0)
    assert read == state and version == 0
    # The leader shrinks the ISR, conditional on the version it read.
    shrunk = LeaderAndIsr(1, 0, (1, 2), 1)
    assert store.update_partition_state("t", 0, shrunk, 0) == 1
    # A writer that read version 0 loses the race.
    with pytest.raises(BadVersionError):
        store.update_partition_state("t", 0, LeaderAndIsr(2, 1, (2,), 1), 0)
    read, version = store.partition_state("t", 0)
    assert read == LeaderAndIsr(1, 0, (1, 2), 1, partition_epoch=1) and version == 1
    assert store.partition_states("t") == {0: (read, 1)}


@both_engines
def test_topic_deletion_marker_and_delete(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.watch_deletions(recorder)
    assert store.elect_controller(1) == 1
    store.create_topic("doomed", uuid.uuid4(), {0: [1]}, {"retention.ms": "5"})
    store.create_partition_state("doomed", 0, LeaderAndIsr(1, 0, (1,), 1))
    with pytest.raises(UnknownTopicError):
        store.mark_topic_for_deletion("never-existed")
    store.mark_topic_for_deletion("doomed")
    store.mark_topic_for_deletion("doomed")  # idempotent
    assert store.topics_pending_deletion() == {"doomed"}
    wait_for(lambda: recorder.values[-1:] == [frozenset({"doomed"})])
    store.delete_topic("doomed", controller_epoch_zk_version=store.controller_epoch_zk_version)
    assert "doomed" not in store.topics()
    assert store.partition_state("doomed", 0) is None
    assert store.topic_configs("doomed") == {}
    assert store.topics_pending_deletion() == set()
    wait_for(lambda: recorder.values[-1:] == [frozenset()])


@both_engines
def test_config_change_notifications(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.create_topic("cfg", uuid.uuid4(), {0: [1]})
    store.watch_config_changes(recorder)
    store.set_topic_configs("cfg", {"retention.ms": "1000"})
    wait_for(lambda: recorder.values == [["cfg"]])
    assert store.topic_configs("cfg") == {"retention.ms": "1000"}
    store.set_topic_configs("cfg", {})
    wait_for(lambda: recorder.values == [["cfg"], ["cfg"]])
    assert store.topic_configs("cfg") == {}
    with pytest.raises(UnknownTopicError):
        store.set_topic_configs("absent", {"a": "b"})


@both_engines
def test_isr_change_notifications_are_delivered_once_and_deleted(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.watch_isr_changes(recorder)
    store.propagate_isr_change([TopicPartition("a", 1), ("a", 0), TopicPartition("a", 1)])
    wait_for(lambda: recorder.values)
    assert recorder.values[0] == [TopicPartition("a", 0), TopicPartition("a", 1)]
    wait_for(lambda: store._tree.children("/isr_change_notification") == [])
    store.propagate_isr_change([])  # nothing to announce: no node
    time.sleep(0.1)
    assert len(recorder.values) == 1


@both_engines
def test_watch_callbacks_run_on_the_event_loop_through_call_soon_threadsafe(make_store):
    async def main() -> tuple[int, frozenset[int]]:
        loop = asyncio.get_running_loop()
        seen: asyncio.Queue[tuple[int, frozenset[int]]] = asyncio.Queue()
        store = await asyncio.to_thread(make_store, loop.call_soon_threadsafe)
        await asyncio.to_thread(store.watch_brokers, lambda ids: seen.put_nowait((threading.get_ident(), ids)))
        await asyncio.to_thread(store.register_broker, 5, ["PLAINTEXT://127.0.0.1:1"])
        while True:
            thread_id, ids = await asyncio.wait_for(seen.get(), 10)
            if ids:
                return thread_id, ids

    loop_thread_ids: list[int] = []

    async def runner() -> tuple[int, frozenset[int]]:
        loop_thread_ids.append(threading.get_ident())
        return await main()

    thread_id, ids = asyncio.run(runner())
    assert ids == frozenset({5})
    assert thread_id == loop_thread_ids[0]


# --- local engine specifics --------------------------------------------------------------------------


def test_local_state_survives_restart_but_ephemeral_nodes_do_not(tmp_path):
    store = LocalMetadataStore(tmp_path)
    cluster_id = store.get_or_create_cluster_id()
    store.register_broker(0, ["PLAINTEXT://127.0.0.1:9092"])
    assert store.elect_controller(0) == 1
    store.create_topic("kept", uuid.uuid4(), {0: [0]}, {"cleanup.policy": "compact"})
    store.create_partition_state("kept", 0, LeaderAndIsr(0, 0, (0,), 1))
    store.update_partition_state("kept", 0, LeaderAndIsr(0, 1, (0,), 1), 0)
    store.close()
    assert not (tmp_path / (LOCAL_STATE_FILE + ".tmp")).exists()
    raw = json.loads((tmp_path / LOCAL_STATE_FILE).read_text())
    assert json.loads(raw["znodes"]["/brokers/topics/kept"]["data"])["version"] == 3
    assert "/brokers/ids/0" not in raw["znodes"] and "/controller" not in raw["znodes"]

    again = LocalMetadataStore(tmp_path)
    try:
        assert again.get_or_create_cluster_id() == cluster_id
        assert again.live_brokers() == {} and again.current_controller() is None
        assert again.elect_controller(0) == 2  # the epoch is persistent
        state, version = again.partition_state("kept", 0)
        assert state.leader_epoch == 1 and version == 1
        assert again.topic_configs("kept") == {"cleanup.policy": "compact"}
    finally:
        again.close()


def test_local_corrupt_state_file_raises_typed_error(tmp_path):
    for content in (
        "{",
        '{"format": 2}',
        '{"format":1,"next_czxid":1,"znodes":{"/a/b":{"data":"","version":0,"cversion":0,"czxid":1}}}',
        '{"format":1,"next_czxid":1,"znodes":[]}',
    ):
        (tmp_path / LOCAL_STATE_FILE).write_text(content)
        with pytest.raises(MetadataCorruptError):
            LocalMetadataStore(tmp_path)


# --- ZooKeeper specifics -----------------------------------------------------------------------------


@pytest.fixture
def connect(zookeeper_module: ZooKeeperServer) -> str:
    return chroot_connect(zookeeper_module)


@pytest.fixture
def raw_zk(zookeeper_module: ZooKeeperServer, connect: str) -> Iterator[KazooClient]:
    root = KazooClient(hosts=zookeeper_module.connect_string)
    root.start(timeout=10)
    root.ensure_path(connect[connect.index("/") :])
    root.stop()
    root.close()
    client = KazooClient(hosts=connect)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def test_znodes_hold_kafka_layout_and_json(connect, raw_zk):
    store = ZkMetadataStore(connect, session_timeout_ms=1000)
    try:
        store.register_broker(1, ["PLAINTEXT://127.0.0.1:9092"])
        cluster_id = store.get_or_create_cluster_id()
        store.elect_controller(1)
        topic_id = uuid.uuid4()
        store.create_topic("t", topic_id, {0: [1]}, {"segment.bytes": "1024"})
        store.create_partition_state("t", 0, LeaderAndIsr(1, 0, (1,), 1))
        store.mark_topic_for_deletion("t")
        store.set_topic_configs("t", {"segment.bytes": "2048"})

        def read(path: str) -> Any:
            data, _ = raw_zk.get(path)
            return json.loads(data)

        for path in (
            "/brokers/ids",
            "/brokers/topics",
            "/brokers/seqid",
            "/config/changes",
            "/admin/delete_topics",
            "/isr_change_notification",
            "/config/topics",
        ):
            assert raw_zk.exists(path), path
        broker = read("/brokers/ids/1")
        assert broker["version"] == 5 and broker["endpoints"] == ["PLAINTEXT://127.0.0.1:9092"]
        assert broker["host"] == "127.0.0.1" and broker["port"] == 9092 and broker["jmx_port"] == -1
        assert raw_zk.exists("/brokers/ids/1").ephemeralOwner == store.session_id
        assert read("/cluster/id") == {"version": "1", "id": cluster_id}
        controller = read("/controller")
        assert controller["version"] == 2 and controller["brokerid"] == 1 and controller["kraftControllerEpoch"] == -1
        assert raw_zk.get("/controller_epoch")[0] == b"1"
        assert raw_zk.exists("/controller").ephemeralOwner == store.session_id
        topic = read("/brokers/topics/t")
        assert topic["version"] == 3 and topic["partitions"] == {"0": [1]}
        assert topic["topic_id"] == topic_id_to_string(topic_id)
        assert store.topic("t").topic_id == topic_id
        assert read("/brokers/topics/t/partitions/0/state") == {
            "controller_epoch": 1,
            "leader": 1,
            "version": 1,
            "leader_epoch": 0,
            "isr": [1],
        }
        assert raw_zk.exists("/admin/delete_topics/t")
        assert read("/config/topics/t") == {"version": 1, "config": {"segment.bytes": "2048"}}
        changes = raw_zk.get_children("/config/changes")
        assert len(changes) == 1 and changes[0].startswith("config_change_") and len(changes[0]) == 24
        assert read(f"/config/changes/{changes[0]}") == {"version": 2, "entity_path": "topics/t"}
    finally:
        store.close()
    # Closing the session removes the ephemeral nodes at once.
    assert raw_zk.exists("/brokers/ids/1") is None and raw_zk.exists("/controller") is None
    assert raw_zk.exists("/brokers/topics/t") is not None


def test_reads_state_written_by_a_kafka_controller(connect, raw_zk):
    raw_zk.ensure_path("/brokers/topics/legacy/partitions/0")
    raw_zk.set(
        "/brokers/topics/legacy",
        b'{"version":2,"partitions":{"0":[3,1]},"adding_replicas":{},'
        b'"removing_replicas":{},"topic_id":"obLD1OX2RxiKmwwdLj9KWw"}',
    )
    raw_zk.create(
        "/brokers/topics/legacy/partitions/0/state",
        b'{"controller_epoch":7,"leader":3,"version":1,"leader_epoch":12,"isr":[3,1]}',
    )
    store = ZkMetadataStore(connect, session_timeout_ms=1000)
    try:
        info = store.topic("legacy")
        assert info.assignment == {0: (3, 1)}
        assert str(info.topic_id) == "a1b2c3d4-e5f6-4718-8a9b-0c1d2e3f4a5b"
        assert store.partition_state("legacy", 0) == (LeaderAndIsr(3, 12, (3, 1), 7, partition_epoch=0), 0)
    finally:
        store.close()


def test_second_broker_cannot_take_a_live_registration_or_controller(connect):
    first = ZkMetadataStore(connect, session_timeout_ms=1000)
    second = ZkMetadataStore(connect, session_timeout_ms=1000)
    try:
        first.register_broker(1, ["PLAINTEXT://127.0.0.1:1"])
        with pytest.raises(BrokerIdInUseError):
            second.register_broker(1, ["PLAINTEXT://127.0.0.1:2"])
        second.register_broker(2, ["PLAINTEXT://127.0.0.1:2"])
        assert set(first.live_brokers()) == {1, 2}
        assert first.elect_controller(1) == 1
        assert second.elect_controller(2) is None
        assert second.current_controller() == 1 and second.controller_epoch_zk_version is None
    finally:
        first.close()
        second.close()


def test_controller_failover_fences_the_old_controller(connect):
    """Broker 1 is controller; its session ends; broker 2 takes over with a higher epoch; broker 1's
    writes made with its old epoch version are rejected."""
    old = ZkMetadataStore(connect, session_timeout_ms=1000)
    new = ZkMetadataStore(connect, session_timeout_ms=1000)
    try:
        recorder = Recorder()
        new.watch_controller(recorder)
        assert old.elect_controller(1) == 1
        old_fence = old.controller_epoch_zk_version
        old.create_topic("p", uuid.uuid4(), {0: [1, 2]})
        old.create_partition_state("p", 0, LeaderAndIsr(1, 0, (1, 2), 1), controller_epoch_zk_version=old_fence)
        wait_for(lambda: recorder.values[-1:] == [1])
        # Broker 1 loses controllership (here: resigns; a crash is covered by the ephemeral test below).
        assert old.resign_controller(1)
        wait_for(lambda: recorder.values[-1:] == [None])
        assert new.elect_controller(2) == 2
        wait_for(lambda: recorder.values[-1:] == [2])
        # The stale controller's LeaderAndIsr-style write is fenced even with the right partition version.
        with pytest.raises(ControllerMovedError):
            old.update_partition_state("p", 0, LeaderAndIsr(2, 1, (2,), 1), 0, controller_epoch_zk_version=old_fence)
        with pytest.raises(ControllerMovedError):
            old.set_assignment("p", {0: [2, 1]}, controller_epoch_zk_version=old_fence)
        with pytest.raises(ControllerMovedError):
            old.delete_topic("p", controller_epoch_zk_version=old_fence)
        assert new.topic("p") is not None and new.partition_state("p", 0) is not None  # nothing deleted
        assert (
            new.update_partition_state(
                "p", 0, LeaderAndIsr(2, 1, (2,), 2), 0, controller_epoch_zk_version=new.controller_epoch_zk_version
            )
            == 1
        )
        assert new.partition_state("p", 0)[0].controller_epoch == 2
    finally:
        old.close()
        new.close()


_CRASHING_BROKER = textwrap.dedent(
    """
    import sys, time
    from broker.metadata.store import ZkMetadataStore
    store = ZkMetadataStore(sys.argv[1], session_timeout_ms=800)
    store.register_broker(9, ["PLAINTEXT://127.0.0.1:9999"])
    print(store.elect_controller(9), flush=True)
    time.sleep(60)
    """
)


def test_killed_broker_registration_and_controller_expire_with_its_session(connect):
    """kill -9 a process holding /brokers/ids/9 and /controller: both vanish after the session timeout
    (no close), the watchers see it, and another broker wins the next controller epoch."""
    observer = ZkMetadataStore(connect, session_timeout_ms=1000)
    process = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_BROKER, connect], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        brokers = Recorder()
        controllers = Recorder()
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "1"
        observer.watch_brokers(brokers)
        observer.watch_controller(controllers)
        wait_for(lambda: brokers.values[-1:] == [frozenset({9})])
        wait_for(lambda: controllers.values[-1:] == [9])
        process.kill()
        process.wait()
        killed_at = time.monotonic()
        wait_for(lambda: brokers.values[-1:] == [frozenset()], timeout=10)
        wait_for(lambda: controllers.values[-1:] == [None], timeout=10)
        assert time.monotonic() - killed_at < 6
        assert observer.elect_controller(1) == 2
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        observer.close()


def test_restarted_broker_waits_for_its_previous_session_to_expire(connect):
    """kill -9 then restart at once: the old /brokers/ids/9 is still held by the dead session.
    Without waiting registration fails as in Kafka; with a wait it succeeds once the node expires."""
    process = subprocess.Popen(
        [sys.executable, "-c", _CRASHING_BROKER, connect], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    restarted = ZkMetadataStore(connect, session_timeout_ms=1000)
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "1"
        process.kill()
        process.wait()
        with pytest.raises(BrokerIdInUseError):
            restarted.register_broker(9, ["PLAINTEXT://127.0.0.1:9999"])
        started = time.monotonic()
        epoch = restarted.register_broker(9, ["PLAINTEXT://127.0.0.1:9999"], wait_for_previous_session_s=10)
        assert epoch > 0 and time.monotonic() - started < 6
        assert restarted._tree.stat("/brokers/ids/9").owned
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        restarted.close()


def test_broker_reregisters_after_session_expiry(connect, raw_zk):
    """Expire the store's session the way ZooKeeper does for a partitioned broker (another client
    attaches to the session and closes it): the registration vanishes, and the store registers again
    in its new session with a new broker epoch."""
    renewed = Recorder()
    store = ZkMetadataStore(connect, session_timeout_ms=1000, dispatch=renewed.dispatch)
    store.watch_session_renewed(lambda: renewed("renewed"))
    try:
        first_epoch = store.register_broker(3, ["PLAINTEXT://127.0.0.1:3"])
        assert store.elect_controller(3) == 1
        old_session = store.session_id
        twin = KazooClient(hosts=connect, client_id=store._tree._client.client_id)
        twin.start(timeout=10)
        twin.stop()
        twin.close()
        wait_for(lambda: store.session_id not in (0, old_session), timeout=20)
        stat = wait_for(lambda: raw_zk.exists("/brokers/ids/3"), timeout=20)
        assert stat.ephemeralOwner == store.session_id
        assert stat.czxid > first_epoch  # a new registration, so a new broker epoch
        assert store.live_brokers()[3].endpoint() == ("127.0.0.1", 3)
        wait_for(lambda: renewed.values == ["renewed"])
        # The controller node went with the old session; the store no longer claims to fence with it.
        assert store.current_controller() is None and store.controller_epoch_zk_version is None
        assert store.elect_controller(3) == 2
    finally:
        store.close()


# --- batch operations, producer ids, admin requests ---------------------------------------------------


@both_engines
def test_batch_partition_state_create_read_and_conditional_update(make_store):
    store = make_store()
    assert store.elect_controller(1) == 1
    fence = store.controller_epoch_zk_version
    store.create_topic("batch", uuid.uuid4(), {p: [1, 2] for p in range(20)})
    tps = [TopicPartition("batch", p) for p in range(20)]
    created = store.create_partition_states(
        {**{tp: LeaderAndIsr(1, 0, (1, 2), 1) for tp in tps}, TopicPartition("ghost", 0): LeaderAndIsr(1, 0, (1,), 1)},
        controller_epoch_zk_version=fence,
    )
    assert all(created[tp] == 0 for tp in tps)
    assert isinstance(created[TopicPartition("ghost", 0)], UnknownTopicError)
    again = store.create_partition_states({tps[0]: LeaderAndIsr(1, 0, (1,), 1)})
    assert isinstance(again[tps[0]], PartitionStateExistsError)
    states = store.partition_states_many([*tps, TopicPartition("batch", 99)])
    assert states[TopicPartition("batch", 99)] is None
    assert all(states[tp] == (LeaderAndIsr(1, 0, (1, 2), 1), 0) for tp in tps)
    # Someone else bumps partition 3 first: only that update loses; the others land.
    store.update_partition_state("batch", 3, LeaderAndIsr(1, 0, (1,), 1), 0)
    updates = {tp: (LeaderAndIsr(2, 1, (2, 1), 1), 0) for tp in tps}
    results = store.update_partition_states(updates, controller_epoch_zk_version=fence)
    assert isinstance(results[tps[3]], BadVersionError)
    assert [results[tp] for tp in tps if tp != tps[3]] == [1] * 19
    assert store.partition_states("batch")[0] == (LeaderAndIsr(2, 1, (2, 1), 1, partition_epoch=1), 1)
    # A stale controller's batch is fenced as a whole.
    assert store.resign_controller(1) and store.elect_controller(1) == 2
    stale = store.update_partition_states({tps[0]: (LeaderAndIsr(1, 2, (1,), 1), 1)}, controller_epoch_zk_version=fence)
    assert isinstance(stale[tps[0]], ControllerMovedError)


@both_engines
def test_producer_id_blocks_and_broker_sequence_ids(make_store):
    store = make_store()
    assert store.allocate_producer_id_block(1) == (0, 999)
    assert store.allocate_producer_id_block(2) == (1000, 1999)
    assert store.allocate_producer_id_block(1, block_size=10) == (2000, 2009)
    first = store.generate_broker_sequence_id()
    assert store.generate_broker_sequence_id() == first + 1


def test_concurrent_producer_id_blocks_never_overlap(connect, raw_zk):
    stores = [ZkMetadataStore(connect, session_timeout_ms=1000) for _ in range(3)]
    try:
        blocks: list[tuple[int, int]] = []
        lock = threading.Lock()

        def claim(store: TreeMetadataStore, broker_id: int) -> None:
            for _ in range(10):
                block = store.allocate_producer_id_block(broker_id)
                with lock:
                    blocks.append(block)

        threads = [threading.Thread(target=claim, args=(s, i)) for i, s in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(blocks) == [(i * 1000, i * 1000 + 999) for i in range(30)]
        stored = json.loads(raw_zk.get("/latest_producer_id_block")[0])
        assert stored["version"] == 1 and stored["block_start"] == "29000" and stored["block_end"] == "29999"
    finally:
        for store in stores:
            store.close()


@both_engines
def test_reassignment_and_preferred_election_requests(make_store):
    recorder = Recorder()
    store = make_store(recorder.dispatch)
    store.watch_partition_reassignment_request(recorder)
    store.watch_preferred_replica_election_request(recorder)
    assert store.partition_reassignment_request() is None
    store.request_partition_reassignment({TopicPartition("t", 0): [2, 3]})
    assert store.partition_reassignment_request() == {TopicPartition("t", 0): (2, 3)}
    with pytest.raises(NodeExistsError):
        store.request_partition_reassignment({TopicPartition("t", 1): [1]})
    store.request_preferred_replica_election([("t", 1), ("t", 0)])
    assert store.preferred_replica_election_request() == [TopicPartition("t", 0), TopicPartition("t", 1)]
    wait_for(lambda: {TopicPartition("t", 0): (2, 3)} in recorder.values)
    wait_for(lambda: [TopicPartition("t", 0), TopicPartition("t", 1)] in recorder.values)
    store.clear_partition_reassignment_request()
    store.clear_preferred_replica_election_request()
    assert store.partition_reassignment_request() is None and store.preferred_replica_election_request() is None
    wait_for(lambda: recorder.values[-2:] == [None, None])


def test_zk_dump_prints_the_tree_with_data(connect):
    store = ZkMetadataStore(connect, session_timeout_ms=1000)
    try:
        store.register_broker(4, ["PLAINTEXT://127.0.0.1:4"])
        store.create_topic("dumped", uuid.uuid4(), {0: [4]})
        result = subprocess.run(
            [sys.executable, "-m", "broker.metadata.zk_dump", connect, "/brokers"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith("/brokers [v0]")
        broker_line = next(line for line in lines if line.startswith("/brokers/ids/4 "))
        assert "ephemeral" in broker_line and '"version":5' in broker_line
        assert any(line.startswith("/brokers/topics/dumped [v0] {") for line in lines)
        missing = subprocess.run(
            [sys.executable, "-m", "broker.metadata.zk_dump", connect, "/nope"],
            cwd=REPO,
            capture_output=True,
            timeout=30,
        )
        assert missing.returncode == 1
    finally:
        store.close()
