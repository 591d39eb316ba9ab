"""The share coordinator on a KRaft broker (`process.roles=broker`, the test controller of
tests/kraft_controller.py): `__share_group_state` created through the controller on first FindCoordinator, the
state RPCs served, the broker's persister reaching its coordinator in-process."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.config.kafka_config import KafkaConfig
from broker.coordinator.share.persister import PersisterStateBatch, SharePartitionState
from broker.kraft.format import format_dirs
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until
from tests.kraft_controller import ControllerThread


@pytest.fixture
def kraft_broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    controller = ControllerThread(session_timeout_ms=1500, default_replication_factor=1).start()
    data = tmp_path / "kraft0"
    props = {"process.roles": "broker", "node.id": "0", "controller.quorum.voters": controller.voters,
             "controller.listener.names": "CONTROLLER", "broker.heartbeat.interval.ms": "100",
             "initial.broker.registration.timeout.ms": "20000", "share.coordinator.state.topic.num.partitions": "4"}
    b = EmbeddedBroker(props, data_dir=data)
    with open("/dev/null", "w") as devnull:
        format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=devnull)
    b.start()
    try:
        yield b
    finally:
        b.stop()
        controller.stop()


def call(port: int, request: Any) -> Any:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        return roundtrip(s, request, 3)


def test_share_state_on_a_kraft_broker(kraft_broker: EmbeddedBroker) -> None:
    b = kraft_broker
    find = request_class(ApiKey.FIND_COORDINATOR)
    wait_until(lambda: call(b.port, find[6](key_type=2, coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAA:0"]))
               .coordinators[0].error_code == ErrorCode.NONE, 30, "the share coordinator")
    create = request_class(ApiKey.CREATE_TOPICS)
    T = create.CreatableTopic
    resp = call(b.port, create[4](topics=[T(name="kraft-share", num_partitions=1, replication_factor=1,
                                            assignments=[], configs=[])], timeout_ms=30000, validate_only=False))
    assert resp.topics[0].error_code == ErrorCode.NONE, resp
    wait_until(lambda: b.server.metadata_cache.topic_id("kraft-share"), 30, "the topic")
    wait_until(lambda: len(b.server.share_coordinator.state.owned_partitions()) == 4, 30, "the coordinator to load")
    tid = b.server.metadata_cache.topic_id("kraft-share").bytes
    persister = b.server.share_persister
    b.call(persister.initialize, "kg", tid, 0, 1, 0)
    batch = PersisterStateBatch(0, 3, 2, 1)
    b.call(persister.write, "kg", tid, 0, SharePartitionState(1, -1, [batch], leader_epoch=0))
    got = b.call(persister.read, "kg", tid, 0, 0)
    assert (got.state_epoch, got.start_offset, got.batches) == (1, 0, [batch])
