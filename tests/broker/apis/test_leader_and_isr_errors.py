"""LeaderAndIsr: every code of `broker.apis.leader_and_isr.ERRORS`, over a real socket with our codec.

Sent as a controller would, to a broker of its own (broker.id 7) so the session's brokers keep their state."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from broker.apis import leader_and_isr
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.LEADER_AND_ISR)
T = Req.LeaderAndIsrTopicState
BROKER = 7
CONTROLLER_EPOCH = 1000  # newer than any the broker has seen


def send(b: Brokers, port: int, topic: str, replicas: list[int], controller_epoch: int = CONTROLLER_EPOCH,
         broker_epoch: int = -1, topic_id: uuid.UUID | None = None, leader_epoch: int = 0) -> Any:
    return b.call(Req[7](controller_id=BROKER, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                         topic_states=[
        T(topic_name=topic, topic_id=topic_id or uuid.uuid4(), partition_states=[T.LeaderAndIsrPartitionState(
            partition_index=0, controller_epoch=controller_epoch, leader=replicas[0], leader_epoch=leader_epoch,
            isr=replicas,
            partition_epoch=0, replicas=replicas, adding_replicas=[], removing_replicas=[], is_new=True)])],
        live_leaders=[Req.LeaderAndIsrLiveLeader(broker_id=BROKER, host_name="127.0.0.1", port=port)]), port)


def storage_error(b: Brokers) -> Any:
    # the broker's only log dir becomes a plain file: the new partition's log cannot be created in it
    log_dir = Path(tempfile.mkdtemp(prefix="lai-log-dir-"))
    with b.throwaway(broker_id=str(BROKER), log_dirs=str(log_dir)) as other:
        shutil.rmtree(log_dir)
        log_dir.write_text("not a directory")
        try:
            return send(b, other.port, "lai-no-dir", [BROKER])
        finally:
            log_dir.unlink()


def inconsistent_topic_id(b: Brokers) -> Any:
    """The broker holds the partition's log under one topic id; the controller names another (the topic was
    deleted and created again while this broker was away): refused, the partition is not taken up."""
    port = b.other(broker_id=str(BROKER)).port
    first = send(b, port, "lai-recreated", [BROKER])
    assert first.topics[0].partition_errors[0].error_code == ErrorCode.NONE
    return send(b, port, "lai-recreated", [BROKER], leader_epoch=1)


PRODUCERS: dict[ErrorCode, Producer] = {
    # a broker epoch older than the broker's registration (its epoch is above 0): refused whole
    ErrorCode.STALE_BROKER_EPOCH: lambda b: send(b, b.other(broker_id=str(BROKER)).port, "lai-old-broker-epoch",
                                                 [BROKER], broker_epoch=0),
    ErrorCode.STALE_CONTROLLER_EPOCH: lambda b: send(b, b.other(broker_id=str(BROKER)).port, "lai-stale", [BROKER],
                                                     controller_epoch=-1),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, b.other(broker_id=str(BROKER)).port, "lai-elsewhere",
                                                         [BROKER + 1]),
    ErrorCode.KAFKA_STORAGE_ERROR: storage_error,
    ErrorCode.INCONSISTENT_TOPIC_ID: inconsistent_topic_id,
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, denied(b), "lai-denied", [BROKER]),
})

test_errors = error_path_test(leader_and_isr, PRODUCERS)
