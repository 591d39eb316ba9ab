"""UpdateMetadata: every code of `broker.apis.update_metadata.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from broker.apis import update_metadata
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Producer, error_path_test

Req = request_class(ApiKey.UPDATE_METADATA)

PRODUCERS: dict[ErrorCode, Producer] = {
    # a broker epoch older than this broker's registration: refused, nothing changes
    ErrorCode.STALE_BROKER_EPOCH: lambda b: b.call(Req[8](controller_id=0, controller_epoch=-1, broker_epoch=0,
                                                          topic_states=[], live_brokers=[])),
    # a controller epoch older than any: refused, nothing changes
    ErrorCode.STALE_CONTROLLER_EPOCH: lambda b: b.call(Req[8](controller_id=0, controller_epoch=-1,
                                                              broker_epoch=-1, topic_states=[], live_brokers=[])),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(
        Req[8](controller_id=0, controller_epoch=1, broker_epoch=-1, topic_states=[], live_brokers=[]), denied(b)),
})

test_errors = error_path_test(update_metadata, PRODUCERS)
