"""ControlledShutdown: every code of `broker.apis.controlled_shutdown.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from broker.apis import controlled_shutdown
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Producer, error_path_test

Req = request_class(ApiKey.CONTROLLED_SHUTDOWN)

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: b.call(Req[3](broker_id=1, broker_epoch=-1), b.not_controller_port()),
}

test_errors = error_path_test(controlled_shutdown, PRODUCERS)
