"""StopReplica: every code of `broker.apis.stop_replica.ERRORS`, over a real socket with our codec.

Sent as a controller would, to a broker of its own (broker.id 7) so the session's brokers keep their state."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from broker.apis import stop_replica
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test
from .test_leader_and_isr_errors import BROKER, CONTROLLER_EPOCH
from .test_leader_and_isr_errors import send as leader_and_isr

Req = request_class(ApiKey.STOP_REPLICA)
T = Req.StopReplicaTopicState


def send(b: Brokers, port: int, topic: str, controller_epoch: int = CONTROLLER_EPOCH, broker_epoch: int = -1) -> Any:
    return b.call(Req[3](controller_id=BROKER, controller_epoch=controller_epoch, broker_epoch=broker_epoch,
                         topic_states=[
        T(topic_name=topic, partition_states=[T.StopReplicaPartitionState(
            partition_index=0, leader_epoch=0, delete_partition=True)])]), port)


def storage_error(b: Brokers) -> Any:
    # the partition's directory disappears under the broker: its log cannot be renamed for deletion
    log_dir = Path(tempfile.mkdtemp(prefix="stop-replica-log-dir-"))
    with b.throwaway(broker_id=str(BROKER), log_dirs=str(log_dir)) as other:
        answer = leader_and_isr(b, other.port, "stop-replica-gone", [BROKER])
        assert answer.topics[0].partition_errors[0].error_code == 0
        shutil.rmtree(log_dir / "stop-replica-gone-0")
        return send(b, other.port, "stop-replica-gone")


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.STALE_BROKER_EPOCH: lambda b: send(b, b.other(broker_id=str(BROKER)).port, "stop-replica-old",
                                                 broker_epoch=0),
    ErrorCode.STALE_CONTROLLER_EPOCH: lambda b: send(b, b.other(broker_id=str(BROKER)).port, "stop-replica-stale",
                                                     controller_epoch=-1),
    ErrorCode.KAFKA_STORAGE_ERROR: storage_error,
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, denied(b), "stop-replica-denied"),
})

test_errors = error_path_test(stop_replica, PRODUCERS)
