"""Our KRaft broker against a test controller at Kafka 4.x's levels, over real sockets: registration at
metadata.version 4.1-IV1 (27) with the features a Kafka 4.1 cluster finalizes that we implement
(transaction.version 1, group.version 1, kraft.version 1 with the leader found through
controller.quorum.bootstrap.servers), topics written with PartitionRecord v2, a ClearElrRecord applied; a
cluster that finalized transaction.version 2 (Kafka 4.x's default) joined, a TV2 transaction (raw requests) and
a stock TV1 one committed there, the coordinator writing flexible __transaction_state values, its fences and
timeouts aborting under TV2's rules; and the one-line
refusals when the cluster finalized what we do not implement (a transaction.version above 2, a share.version
above 2, a metadata.version above Kafka 4.4's)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.config.kafka_config import KafkaConfig
from broker.kraft.format import format_dirs
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.metadata_records import ClearElrRecord, PartitionChangeRecord
from tests.cluster.support import raw_request
from tests.cluster.test_kraft_cluster import FAST, produce_and_consume, wait_for
from tests.kraft_controller import ControllerThread


def _broker(controller: ControllerThread, data: Path, node_id: int = 1, bootstrap_only: bool = False,
            **extra: str) -> EmbeddedBroker:
    quorum = ({"controller.quorum.bootstrap.servers": controller.voters.split("@")[1]} if bootstrap_only
              else {"controller.quorum.voters": controller.voters})
    props = {"process.roles": "broker", "node.id": str(node_id), "controller.listener.names": "CONTROLLER",
             **quorum, **FAST, "offsets.topic.replication.factor": "1", **extra}
    b = EmbeddedBroker(props, data_dir=data)
    format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
    return b


def test_a_broker_joins_a_kafka_4_1_cluster_and_applies_clear_elr(tmp_path: Path) -> None:
    controller = ControllerThread(metadata_version=27, kraft_version=1, session_timeout_ms=3000,
                                  features={"group.version": 1, "transaction.version": 1}).start()
    b = _broker(controller, tmp_path / "b", bootstrap_only=True)
    try:
        b.start()
        reg = controller.call(lambda c: c.image.cluster.broker(1))
        assert not reg.fenced
        assert {n: reg.supported_features[n] for n in ("metadata.version", "transaction.version", "kraft.version")} \
            == {"metadata.version": (7, 33), "transaction.version": (0, 2), "kraft.version": (0, 1)}
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("t4", 1, 1)])["t4"].result(20)
        produce_and_consume(b.bootstrap, "t4", n=5)

        image = b.server.controller.loader.image
        assert image.features.metadata_version == 27
        assert image.features.finalized_versions == {"group.version": 1, "transaction.version": 1}
        topic_id = image.topics.by_name["t4"].topic_id
        # An ELR as a 4.x controller keeps it (written directly: the fixture does not run KIP-966), then cleared.
        controller.call(lambda c: c.append([PartitionChangeRecord(partition_id=0, topic_id=topic_id,
                                                                  last_known_elr=[7], version=2)]))
        before = wait_for(lambda: _partition(b, "t4").last_known_elr == (7,) and _partition(b, "t4"),
                          what="last-known ELR in the broker's image")
        controller.call(lambda c: c.append([ClearElrRecord(topic_name="", version=0)]))
        after = wait_for(lambda: _partition(b, "t4").last_known_elr == () and _partition(b, "t4"),
                         what="ELR cleared in the broker's image")
        assert after.partition_epoch == before.partition_epoch + 1 and after.leader_epoch == before.leader_epoch
        produce_and_consume(b.bootstrap, "t4", n=5, first=5)  # still the leader, at the new partition epoch
    finally:
        b.stop()
        controller.stop()


def test_a_broker_joins_a_transaction_version_2_cluster_and_runs_both_kinds_of_transactions(tmp_path: Path) -> None:
    from tests.e2e import test_transactions_v2 as tv2

    controller = ControllerThread(metadata_version=27, features={"group.version": 1, "transaction.version": 2}).start()
    b = _broker(controller, tmp_path / "b")
    try:
        b.start()
        assert b.server.transaction_coordinator.transaction_version_level() == 2
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(tv2.TOPIC, 2, 1)])[tv2.TOPIC].result(60)
        pid, epoch = tv2.init(b.port)
        assert tv2.produce(b.port, pid, epoch, {0: b"v2-0", 1: b"v2-1"}) == {0: 0, 1: 0}
        assert tv2.end(b.port, pid, epoch, commit=True) == (0, pid, epoch + 1)
        wait_for(lambda: tv2.describe(b.port, tv2.TXN).transaction_state == "CompleteCommit", what="the commit")
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "tv1-txn"})
        p.init_transactions(30)
        p.begin_transaction()
        p.produce(tv2.TOPIC, b"tv1", partition=0)
        p.commit_transaction(30)
        assert sorted(tv2.read_all(b.bootstrap, tv2.TOPIC, 3)) == [b"tv1", b"v2-0", b"v2-1"]
        md = b.server.transaction_coordinator.state.get_state(tv2.TXN)[1]
        assert (md.client_transaction_version, md.producer_epoch) == (2, epoch + 1)

        # A new producer instance meets an ongoing TV2 transaction: the fence aborts it under the cluster's
        # transaction.version 2, one bump for the fence and one for the abort, then InitProducerId bumps again.
        epoch2 = epoch + 1
        assert tv2.produce(b.port, pid, epoch2, {0: b"fenced"}) == {0: 0}
        Init = request_class(ApiKey.INIT_PRODUCER_ID)[5]
        init = Init(transactional_id=tv2.TXN, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
        assert raw_request(b.port, init).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
        wait_for(lambda: tv2.describe(b.port, tv2.TXN).transaction_state == "CompleteAbort", what="the fence")
        assert tv2.describe(b.port, tv2.TXN).producer_epoch == epoch2 + 2
        again = raw_request(b.port, init)
        assert (again.error_code, again.producer_id, again.producer_epoch) == (0, pid, epoch2 + 3)
        assert tv2.end(b.port, pid, epoch2, commit=False) == (ErrorCode.PRODUCER_FENCED, -1, -1)

        # __transaction_state was written at value version 1: the TV2 fields come back after a restart.
        assert tv2.produce(b.port, pid, epoch2 + 3, {1: b"after-restart"}) == {1: 0}
        b.stop()
        b.start()
        pid2, epoch4 = pid, epoch2 + 3
        wait_for(lambda: tv2.describe(b.port, tv2.TXN).error_code == 0, what="the reloaded coordinator")
        md = b.server.transaction_coordinator.state.get_state(tv2.TXN)[1]
        assert (md.state.state_name, md.client_transaction_version, md.producer_epoch, md.last_producer_id) == (
            "Ongoing", 2, epoch4, pid2)
        assert tv2.end(b.port, pid2, epoch4, commit=True) == (0, pid2, epoch4 + 1)
        wait_for(lambda: tv2.describe(b.port, tv2.TXN).transaction_state == "CompleteCommit", what="the commit")
        assert sorted(tv2.read_all(b.bootstrap, tv2.TOPIC, 4)) == [b"after-restart", b"tv1", b"v2-0", b"v2-1"]
    finally:
        b.stop()
        controller.stop()


def test_a_timed_out_transaction_on_a_transaction_version_2_cluster_is_aborted_with_two_bumps(tmp_path: Path) -> None:
    """The coordinator's own abort follows the cluster's level: on TV2 the fence bumps, then the TV2 abort."""
    from tests.e2e import test_transactions_v2 as tv2

    controller = ControllerThread(metadata_version=27, features={"transaction.version": 2}).start()
    b = _broker(controller, tmp_path / "b", **{"transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
    try:
        b.start()
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(tv2.TOPIC, 2, 1)])[tv2.TOPIC].result(60)
        Init = request_class(ApiKey.INIT_PRODUCER_ID)[5]
        init = Init(transactional_id=tv2.TXN, transaction_timeout_ms=500, producer_id=-1, producer_epoch=-1)
        raw_request(b.port, request_class(ApiKey.FIND_COORDINATOR)[3](key=tv2.TXN, key_type=1))
        answers: list[Any] = []
        wait_for(lambda: answers.append(raw_request(b.port, init)) or answers[-1].error_code == 0,
                 what="InitProducerId")
        pid, epoch = answers[-1].producer_id, answers[-1].producer_epoch
        assert tv2.produce(b.port, pid, epoch, {0: b"too-slow"}) == {0: 0}
        wait_for(lambda: tv2.describe(b.port, tv2.TXN).transaction_state == "CompleteAbort", what="the timeout")
        assert tv2.describe(b.port, tv2.TXN).producer_epoch == epoch + 2
        assert tv2.end(b.port, pid, epoch, commit=True) == (ErrorCode.PRODUCER_FENCED, -1, -1)
        assert tv2.produce(b.port, pid, epoch, {1: b"zombie"}) == {1: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert tv2.read_all(b.bootstrap, tv2.TOPIC, 0) == []
    finally:
        b.stop()
        controller.stop()


def _partition(b: EmbeddedBroker, topic: str) -> Any:
    return b.server.controller.loader.image.topics.get_partition(topic, 0)


@pytest.mark.parametrize(("level", "features", "line"), [
    (27, {"group.version": 1, "transaction.version": 3},
     "the cluster's finalized transaction.version is 3; this broker supports transaction.version 0 to 2: change it "
     "with `kafka-features.sh downgrade --feature transaction.version=2` (or format a new cluster with "
     "`kafka-storage.sh format --feature transaction.version=2`)"),
    (33, {"share.version": 3},
     "the cluster's finalized share.version is 3; this broker supports share.version 0 to 2: change it with "
     "`kafka-features.sh downgrade --feature share.version=2` (or format a new cluster with `kafka-storage.sh format "
     "--feature share.version=2`)"),
    (34, {},
     "the cluster's finalized metadata.version is 34 (34); this broker supports 7 (3.3-IV3) to 33 (4.4-IV2): change "
     "it with `kafka-features.sh downgrade --metadata 4.4-IV2` (or format a new cluster with `kafka-storage.sh "
     "format --release-version 4.4-IV2`)"),
], ids=["transaction.version-3", "share.version-3", "metadata.version-34"])
def test_start_refused_by_a_cluster_finalizing_what_we_do_not_implement(
        tmp_path: Path, level: int, features: dict[str, int], line: str) -> None:
    controller = ControllerThread(metadata_version=level, features=features).start()
    try:
        b = _broker(controller, tmp_path / f"b{uuid.uuid4().hex[:6]}")
        with pytest.raises(RuntimeError) as e:
            b.start()
        assert f"the controller refused this broker's registration: UNSUPPORTED_VERSION: {line}" in str(e.value)
    finally:
        controller.stop()
