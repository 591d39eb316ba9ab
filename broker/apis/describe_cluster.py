"""DescribeCluster (key 60), versions 0–1.

The cluster id, the controller and the live brokers (never fenced in ZooKeeper mode). v1's endpoint
type 1 (brokers) is the only one served; 2 (controllers, KRaft) answers UNSUPPORTED_ENDPOINT_TYPE.
`include_cluster_authorized_operations`: the cluster operations the principal may do (every supported one
without an authorizer; none without DESCRIBE on the cluster), as Kafka.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 60
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,)


def handle(ctx: RequestContext, request: Any) -> Any:
    cache = ctx.server.metadata_cache
    Resp = response_type(request)
    if request.API_VERSION >= 1 and request.endpoint_type not in (1,):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
                            error_message="only broker endpoints are served", cluster_id=cache.cluster_id,
                            controller_id=-1, brokers=[])
    operations = None  # the schema's default: not asked for
    if request.include_cluster_authorized_operations:
        operations = (ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
                      if ctx.authorize_cluster(AclOperation.DESCRIBE) else set())
    brokers = [Resp.DescribeClusterBroker(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
               for b in sorted(cache.listed_brokers(ctx.listener).values(), key=lambda b: b.broker_id)]
    return response_for(request, throttle_time_ms=0, error_code=0, error_message=None, cluster_id=cache.cluster_id,
                        controller_id=cache.listed_controller_id(), brokers=brokers,
                        endpoint_type=1, authorized_operations=operations)
