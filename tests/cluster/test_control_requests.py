"""The controller's requests as a broker receives them (Kafka's onBrokerStartup and KIP-380 broker epochs).

- A broker restarted under the controller (kill -9, then start) first hears UpdateMetadata naming every live
  broker, and only then LeaderAndIsr: read from the restarted broker's own log, where each control request it
  applies is logged as it arrives. It then fetches from the leader and rejoins the ISR: through AlterPartition
  to the controller at inter.broker.protocol.version 3.7, by the leader's own ZooKeeper write at 2.6 (whose
  control requests go out at the older versions Kafka's controller uses there).
- Control requests stamped with an older broker epoch than the broker's registration (the czxid of
  /brokers/ids/<id>) are refused with STALE_BROKER_EPOCH; -1 (a controller without broker epochs) and the
  current epoch are accepted. ControlledShutdown with a stale epoch is refused by the controller the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Producer

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import Zk, create_topic, raw_request, start_cluster, wait_isr, wait_until

TOPIC = "ctlreq"
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100"}
_CONTROL = re.compile(r"(UpdateMetadata|LeaderAndIsr) from controller (\d+) \(epoch (\d+)\)")
_LIVE = re.compile(r"live brokers \[([\d, ]*)\]")


def _control_requests(log_text: str, controller_epoch: int | None = None) -> list[tuple[str, list[int]]]:
    """(request, live brokers named) for each control request the log shows (of one controller epoch)."""
    out = []
    for line in log_text.splitlines():
        m = _CONTROL.search(line)
        if m and (controller_epoch is None or int(m.group(3)) == controller_epoch):
            live = _LIVE.search(line)
            brokers = [int(b) for b in live.group(1).split(",")] if live and live.group(1) else []
            out.append((m.group(1), brokers))
    return out


@pytest.mark.parametrize("ibp", ["3.7", "2.6"])
def test_restarted_broker_hears_update_metadata_before_leader_and_isr(tmp_path: Path, ibp: str) -> None:
    cluster = start_cluster(tmp_path, {**OVERRIDES, "inter.broker.protocol.version": ibp})
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        follower = next(b for b in range(3) if b != controller)
        create_topic(cluster.bootstrap, TOPIC, 3, 3, {"min.insync.replicas": "2"})
        wait_isr(zk, TOPIC, 3, {0, 1, 2}, 20)

        cluster.brokers[follower].kill()
        wait_until(lambda: follower not in zk.live_brokers(), 15, "the killed broker's registration to expire")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "message.timeout.ms": 30000})
        for i in range(300):
            producer.produce(TOPIC, value=str(i).encode(), partition=i % 3)
        assert producer.flush(30) == 0

        log_path = cluster.brokers[follower].log_path
        offset = log_path.stat().st_size
        cluster.restart(follower)
        wait_isr(zk, TOPIC, 3, {0, 1, 2}, 30)

        with open(log_path, "rb") as f:
            f.seek(offset)
            received = _control_requests(f.read().decode(errors="replace"))
        kinds = [k for k, _ in received]
        assert "LeaderAndIsr" in kinds, received
        first_lai = kinds.index("LeaderAndIsr")
        before = received[:first_lai]
        assert before and before[0][0] == "UpdateMetadata", received
        assert set(before[0][1]) == {0, 1, 2}, received  # every live broker, itself included
        # The leaders took the restarted follower back into the ISR through the controller (AlterPartition)
        # from inter.broker.protocol.version 2.7-IV2 on, by writing ZooKeeper themselves before.
        controller_log = cluster.brokers[controller].log_path.read_text(errors="replace")
        assert ("proposed by its leader" in controller_log) == (ibp == "3.7")
    finally:
        zk.close()
        cluster.cleanup()


def test_stale_broker_epochs_are_refused(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        other = next(b for b in range(3) if b != controller)
        port = cluster.brokers[other].port
        epoch = zk.client.exists(f"/brokers/ids/{other}").czxid
        controller_epoch = zk.controller_epoch()

        UM = request_class(ApiKey.UPDATE_METADATA)
        B = UM.UpdateMetadataBroker
        # The accepted ones replace the broker's view of the live brokers: give it the true one.
        live = [B(id=b, rack=None, endpoints=[B.UpdateMetadataEndpoint(
            host="127.0.0.1", port=cluster.brokers[b].port, listener="PLAINTEXT", security_protocol=0)])
            for b in range(3)]
        for broker_epoch, expected in ((epoch - 1, ErrorCode.STALE_BROKER_EPOCH), (-1, ErrorCode.NONE),
                                       (epoch, ErrorCode.NONE)):
            resp = raw_request(port, UM[8](controller_id=controller, controller_epoch=controller_epoch,
                                           broker_epoch=broker_epoch, request_type=0, topic_states=[],
                                           live_brokers=live))
            assert resp.error_code == expected, (broker_epoch, resp)

        LAI = request_class(ApiKey.LEADER_AND_ISR)
        PS = LAI.LeaderAndIsrPartitionState
        state = PS(partition_index=0, controller_epoch=controller_epoch, leader=other, leader_epoch=0, isr=[other],
                   partition_epoch=0, replicas=[other], adding_replicas=[], removing_replicas=[], is_new=True)
        resp = raw_request(port, LAI[4](controller_id=controller, controller_epoch=controller_epoch,
                                        broker_epoch=epoch - 1, ungrouped_partition_states=[],
                                        topic_states=[LAI.LeaderAndIsrTopicState(topic_name="never",
                                                                                  partition_states=[state])],
                                        live_leaders=[]))
        assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH
        assert [(p.topic_name, p.partition_index, p.error_code) for p in resp.partition_errors] == \
            [("never", 0, ErrorCode.STALE_BROKER_EPOCH)]

        SR = request_class(ApiKey.STOP_REPLICA)
        resp = raw_request(port, SR[3](controller_id=controller, controller_epoch=controller_epoch,
                                       broker_epoch=epoch - 1, topic_states=[]))
        assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH

        CS = request_class(ApiKey.CONTROLLED_SHUTDOWN)
        resp = raw_request(cluster.brokers[controller].port, CS[3](broker_id=other, broker_epoch=epoch - 1))
        assert resp.error_code == ErrorCode.STALE_BROKER_EPOCH
        assert other in zk.live_brokers()

        # Controller fail-over: the new controller's first request to a surviving broker is UpdateMetadata
        # naming the live brokers, before any LeaderAndIsr (Kafka's onControllerFailover).
        create_topic(cluster.bootstrap, TOPIC, 2, 3)
        cluster.brokers[controller].kill()
        wait_until(lambda: zk.controller() not in (None, controller), 20, "a new controller")
        new_controller, new_epoch = zk.controller(), zk.controller_epoch()
        survivor = next(b for b in range(3) if b not in (controller, new_controller))
        survivors = {new_controller, survivor}

        def heard() -> list[tuple[str, list[int]]]:
            got = _control_requests(cluster.brokers[survivor].log_path.read_text(errors="replace"), new_epoch)
            return got if "LeaderAndIsr" in [k for k, _ in got] else []

        received = wait_until(heard, 20, "the new controller's LeaderAndIsr")
        assert received[0][0] == "UpdateMetadata" and set(received[0][1]) >= survivors, received
    finally:
        zk.close()
        cluster.cleanup()
