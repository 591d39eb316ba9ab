"""ControlledShutdown: every code of `broker.apis.controlled_shutdown.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from typing import Any

from broker.apis import controlled_shutdown
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Producer, error_path_test

Req = request_class(ApiKey.CONTROLLED_SHUTDOWN)

def stale_broker_epoch(b: Any) -> Any:
    # to a broker that is its own controller, for itself with an epoch older than its registration: refused,
    # and nothing shuts down (a broker of its own all the same)
    with b.throwaway() as other:
        return b.call(Req[3](broker_id=0, broker_epoch=0), other.port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.STALE_BROKER_EPOCH: stale_broker_epoch,
    ErrorCode.NOT_CONTROLLER: lambda b: b.call(Req[3](broker_id=1, broker_epoch=-1), b.not_controller_port()),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[3](broker_id=1, broker_epoch=-1), denied(b)),
})

test_errors = error_path_test(controlled_shutdown, PRODUCERS)
