"""AllocateProducerIds (KIP-730) served by our controller, and used by our brokers at
inter.broker.protocol.version 3.0+ (Kafka's RPCProducerIdManager), in a 3-broker cluster on a real ZooKeeper.

Frames built with our codec on a plain socket, answers checked field by field, and the block the controller
claimed read back from /latest_producer_id_block in Kafka's JSON. Producer ids handed out by every broker
never overlap each other nor a block claimed by hand, across a kill -9 of the controller.
"""

from __future__ import annotations

import json
from pathlib import Path

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import Zk, init_producer_id, raw_request, start_cluster, wait_until

OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "inter.broker.protocol.version": "3.7"}


def _allocate(port: int, broker_id: int, broker_epoch: int) -> object:
    return raw_request(port, request_class(ApiKey.ALLOCATE_PRODUCER_IDS)[0](broker_id=broker_id,
                                                                             broker_epoch=broker_epoch))


def test_allocate_producer_ids(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None and len(zk.live_brokers()) == 3, 15, "a controller")
        controller = zk.controller()
        other = next(b for b in range(3) if b != controller)
        epoch = zk.client.exists(f"/brokers/ids/{other}").czxid
        port = cluster.brokers[controller].port
        handed_out = {init_producer_id(cluster.brokers[b].port) for b in range(3)}

        resp = _allocate(port, other, epoch)
        assert (resp.error_code, resp.throttle_time_ms, resp.producer_id_len) == (ErrorCode.NONE, 0, 1000)
        start = resp.producer_id_start
        block = json.loads(zk.client.get("/latest_producer_id_block")[0])
        assert block == {"version": 1, "broker": other, "block_start": str(start), "block_end": str(start + 999)}
        assert not handed_out & set(range(start, start + 1000))

        again = _allocate(port, other, epoch)
        assert (again.error_code, again.producer_id_start, again.producer_id_len) == (0, start + 1000, 1000)

        def refused(p: int, broker_id: int, broker_epoch: int) -> tuple[int, int, int]:
            r = _allocate(p, broker_id, broker_epoch)
            return r.error_code, r.producer_id_start, r.producer_id_len

        assert refused(port, other, epoch - 1) == (ErrorCode.STALE_BROKER_EPOCH, -1, 0)
        assert refused(port, other, epoch + 1) == (ErrorCode.STALE_BROKER_EPOCH, -1, 0)
        assert refused(port, 17, epoch) == (ErrorCode.BROKER_ID_NOT_REGISTERED, -1, 0)
        assert refused(cluster.brokers[other].port, other, epoch) == (ErrorCode.NOT_CONTROLLER, -1, 0)
        assert json.loads(zk.client.get("/latest_producer_id_block")[0])["block_start"] == str(start + 1000)

        # Every broker's ids come from blocks the controller claimed: none inside the two claimed by hand.
        handed_out |= {init_producer_id(cluster.brokers[b].port) for b in range(3) for _ in range(5)}
        cluster.brokers[controller].kill()
        wait_until(lambda: zk.controller() not in (None, controller), 20, "a new controller")
        survivors = [b for b in range(3) if b != controller]
        handed_out |= {init_producer_id(cluster.brokers[b].port) for b in survivors for _ in range(5)}
        assert len(handed_out) == 3 + 15 + 10
        assert not handed_out & set(range(start, start + 2000))
    finally:
        zk.close()
        cluster.cleanup()
