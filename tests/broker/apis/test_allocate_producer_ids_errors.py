"""AllocateProducerIds: every code of `broker.apis.allocate_producer_ids.ERRORS`, over a real socket with our
codec, as a broker asks the controller (the session's single broker is its own); none is granted a block."""

from __future__ import annotations

from broker.apis import allocate_producer_ids
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Producer, error_path_test

Req = request_class(ApiKey.ALLOCATE_PRODUCER_IDS)

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: b.call(Req[0](broker_id=1, broker_epoch=-1), b.not_controller_port()),
    ErrorCode.BROKER_ID_NOT_REGISTERED: lambda b: b.call(Req[0](broker_id=9, broker_epoch=1)),
    ErrorCode.STALE_BROKER_EPOCH: lambda b: b.call(Req[0](broker_id=0, broker_epoch=0)),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[0](broker_id=0, broker_epoch=-1), denied(b)),
})

test_errors = error_path_test(allocate_producer_ids, PRODUCERS)
