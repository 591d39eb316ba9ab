"""AllocateProducerIds (key 67), version 0 — a broker asks the controller for a block of producer ids.

Served by the active controller (Kafka's KIP-730, which Kafka's ZooKeeper-mode controller serves to brokers
at inter.broker.protocol.version 3.0 and later): the block is claimed from the same /latest_producer_id_block
znode brokers of older versions claim from directly, so no two brokers ever hand out the same id. Errors as
Kafka's controller answers them: NOT_CONTROLLER on any other broker, BROKER_ID_NOT_REGISTERED for a broker
that is not live, STALE_BROKER_EPOCH unless the epoch is the broker's current registration.
With an authorizer: CLUSTER_ACTION on the cluster (brokers and the controller only), else
CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.controller.controller import StaleBrokerEpoch, UnknownBroker
from broker.kraft import zk_apis
from broker.metadata import MetadataError
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 67
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.BROKER_ID_NOT_REGISTERED, ErrorCode.STALE_BROKER_EPOCH,
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):  # not enabled on a KRaft broker (broker/kraft/zk_apis.py)
        return None
    controller = ctx.server.controller
    error = ErrorCode.NONE
    start, length = -1, 0
    if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    elif controller is None or not controller.active:
        error = ErrorCode.NOT_CONTROLLER
    else:
        try:
            start, length = await controller.allocate_producer_ids(request.broker_id, request.broker_epoch)
        except UnknownBroker:
            error = ErrorCode.BROKER_ID_NOT_REGISTERED
        except StaleBrokerEpoch:
            error = ErrorCode.STALE_BROKER_EPOCH
        except MetadataError:
            error = ErrorCode.UNKNOWN_SERVER_ERROR
    return response_for(request, throttle_time_ms=0, error_code=error, producer_id_start=start,
                        producer_id_len=length)
