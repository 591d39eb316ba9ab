"""Share-group state fails over with its `__share_group_state` partition: a fourth broker (in this process) persists
share partitions' state through its RpcPersister to share coordinators on the three others, the coordinator of
one of them is killed -9 (or stopped), and the broker that now leads that `__share_group_state` partition loads the
ShareSnapshot/ShareUpdate records: the persister, finding it again, reads the state back intact and goes on
writing. Broker 3 joins after `__share_group_state` was created on brokers 0-2, so it coordinates nothing and
every call crosses the network; calls made at once for one group are batched per coordinator.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from broker.coordinator.share.persister import PersisterError, PersisterStateBatch, SharePartitionState
from broker.coordinator.share.records import ShareKey
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import Zk, create_topic, raw_request, start_cluster, wait_isr, wait_until

TOPIC = "share-failover"
GROUP = "share-failover-group"
WIDE = "share-failover-wide"
WIDE_PARTITIONS = 12
STATE_TOPIC = "__share_group_state"
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
             "share.coordinator.state.topic.num.partitions": "3",
             "share.coordinator.snapshot.update.records.per.snapshot": "3"}
B = PersisterStateBatch
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


def on_loop(broker: EmbeddedBroker, fn: Any, *args: Any, timeout: float = 120) -> Any:
    """Await fn(*args) on the broker's loop (the persister retries for up to ~15 s a step)."""
    assert broker.loop is not None
    return asyncio.run_coroutine_threadsafe(fn(*args), broker.loop).result(timeout)


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_share_state_survives_its_coordinators_death(tmp_path: Path, how: str) -> None:
    """`kill`: kill -9; `stop`: SIGTERM, a controlled shutdown that moves leadership first."""
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    b3: EmbeddedBroker | None = None
    try:
        create_topic(cluster.bootstrap, TOPIC, 2, 3)
        create_topic(cluster.bootstrap, WIDE, WIDE_PARTITIONS, 1)
        find = request_class(ApiKey.FIND_COORDINATOR)
        wait_until(lambda: raw_request(cluster.ports[0], find[6](
            key_type=2, coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAA:0"])).coordinators[0].error_code == ErrorCode.NONE,
            30, "__share_group_state")
        wait_isr(zk, STATE_TOPIC, 3, {0, 1, 2}, 30)

        b3 = EmbeddedBroker(cluster.broker_props(3), data_dir=tmp_path / "broker3").start()
        server = b3.server
        wait_until(lambda: STATE_TOPIC in server.metadata_cache.topics and server.metadata_cache.topic_id(TOPIC)
                   and server.metadata_cache.topic_id(WIDE), 30, "broker 3 to learn the topics")
        tid = server.metadata_cache.topic_id(TOPIC)
        persister = server.share_persister
        keys = [ShareKey(GROUP, tid, p) for p in range(2)]
        coordinators = {k.partition: zk.partition_state(STATE_TOPIC, server.share_coordinator.partition_for(k))
                        ["leader"] for k in keys}
        assert 3 not in coordinators.values()

        expected: dict[int, SharePartitionState] = {}
        for k in keys:
            on_loop(b3, persister.initialize, GROUP, tid.bytes, k.partition, 1, 0)
            # enough writes for a ShareSnapshot and ShareUpdates after it (3 updates per snapshot)
            for i in range(6):
                batches = [B(i * 10, i * 10 + 9, AVAILABLE, 1), B(i * 10, i * 10 + 4, ACKNOWLEDGED, 1)]
                on_loop(b3, persister.write, GROUP, tid.bytes, k.partition,
                        SharePartitionState(1, 5 if i == 4 else -1, batches, leader_epoch=0))
            expected[k.partition] = on_loop(b3, persister.read, GROUP, tid.bytes, k.partition, 0)
        assert expected[0].start_offset == 5
        assert expected[0].batches[0] == B(5, 9, AVAILABLE, 1)
        assert expected[0].batches[-1] == B(55, 59, AVAILABLE, 1)

        victim = coordinators[0]
        wait_isr(zk, STATE_TOPIC, 3, {0, 1, 2}, 30)
        if how == "kill":
            cluster.brokers[victim].kill()
        else:
            cluster.brokers[victim].stop()

        for k in keys:
            got = on_loop(b3, persister.read, GROUP, tid.bytes, k.partition, 0)
            assert (got.state_epoch, got.start_offset, got.batches) == \
                (expected[k.partition].state_epoch, expected[k.partition].start_offset,
                 expected[k.partition].batches), f"state of {k} changed across the failover"
        new_leader = zk.partition_state(STATE_TOPIC, server.share_coordinator.partition_for(keys[0]))["leader"]
        assert new_leader not in (victim, -1)

        # the new coordinator goes on from the loaded state: fencing included
        on_loop(b3, persister.write, GROUP, tid.bytes, 0,
                SharePartitionState(1, -1, [B(60, 61, ARCHIVED, 5)], leader_epoch=0))
        got = on_loop(b3, persister.read, GROUP, tid.bytes, 0, 0)
        assert got.batches == [*expected[0].batches, B(60, 61, ARCHIVED, 5)]
        summary = on_loop(b3, persister.read_summary, GROUP, tid.bytes, 0, 0)
        assert (summary.state_epoch, summary.start_offset) == (1, 5)
        # many calls at once: batched per coordinator and group, one share partition at most once a request
        sizes: list[int] = []
        send_batch = persister._send_batch

        async def recording(node: int, api_key: int, items: list[Any]) -> None:
            sizes.append(len(items))
            await send_batch(node, api_key, items)

        persister._send_batch = recording
        wide = server.metadata_cache.topic_id(WIDE)
        parts = range(WIDE_PARTITIONS)

        async def at_once(call: Any) -> list[Any]:
            return await asyncio.gather(*(call(p) for p in parts))

        on_loop(b3, at_once, lambda p: persister.initialize(GROUP, wide.bytes, p, 1, 0))
        on_loop(b3, at_once, lambda p: persister.write(GROUP, wide.bytes, p, SharePartitionState(
            1, -1, [B(0, p, ACKNOWLEDGED, 1)], leader_epoch=0)))
        reads = on_loop(b3, at_once, lambda p: persister.read(GROUP, wide.bytes, p, 0))
        assert [r.batches for r in reads] == [[B(0, p, ACKNOWLEDGED, 1)] for p in parts]
        persister._send_batch = send_batch
        assert max(sizes) > 1, sizes

        with pytest.raises(PersisterError) as fenced:
            on_loop(b3, persister.write, GROUP, tid.bytes, 0, SharePartitionState(0, -1, [], leader_epoch=0))
        assert fenced.value.error_code == ErrorCode.FENCED_STATE_EPOCH
    finally:
        if b3 is not None:
            b3.stop()
        zk.close()
        cluster.cleanup()
