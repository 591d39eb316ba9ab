"""ElectLeaders: every code of `broker.apis.elect_leaders.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import elect_leaders
from broker.controller.preferred_election import PREFERRED, UNCLEAN
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import LED_BY_2, OFFLINE_ON_2, Brokers, Producer, error_path_test

Req = request_class(ApiKey.ELECT_LEADERS)


def send(b: Brokers, topic: str, election_type: int = PREFERRED, port: int | None = None) -> Any:
    return b.call(Req[2](election_type=election_type, timeout_ms=30000, topic_partitions=[
        Req.TopicPartitions(topic=topic, partitions=[0])]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: send(b, "elect-any", port=b.not_controller_port()),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, "elect-missing"),
    # the preferred replica (the only one) already leads
    ErrorCode.ELECTION_NOT_NEEDED: lambda b: send(b, b.topic("elect-plain")),
    # LED_BY_2's preferred replica, broker 2, is dead
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: lambda b: send(b, LED_BY_2, port=b.controller_port()),
    # OFFLINE_ON_2 has no live replica at all, not even out of the ISR
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: lambda b: send(b, OFFLINE_ON_2, UNCLEAN, port=b.controller_port()),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, "elect-denied", port=denied(b)),
})

test_errors = error_path_test(elect_leaders, PRODUCERS)
