"""DescribeQuorum (key 55), versions 0–2: the state of the KRaft controller quorum (leader, epoch, high
watermark, each voter's and observer's log end offset and lag), what `kafka-metadata-quorum.sh describe` asks.

Contract (Kafka's broker: KafkaApis forwards it to the controller): served by a KRaft broker only; with an
authorizer it needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED); the request goes on to the
active controller in an Envelope with the client's principal (broker/kraft/admin.py `forward`) and the
controller's answer comes back as it is. A controller that cannot be reached: REQUEST_TIMED_OUT. A ZooKeeper-mode
or single-node broker does not enable it (the connection is closed, as by Kafka's ZooKeeper brokers).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.kraft import zk_apis
from broker.security.acl import AclOperation
from protocol.errors import ErrorCode

API_KEY = 55
MIN_VERSION = 0
MAX_VERSION = 2
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.REQUEST_TIMED_OUT)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if zk_apis.refused(ctx):
        return None
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return _error(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    forwarded = await ctx.server.controller.admin.forward(request)
    return forwarded if forwarded is not None else _error(request, ErrorCode.REQUEST_TIMED_OUT)


# Kafka's Errors.message() of the codes answered here, which getTopLevelErrorResponse sends (v2+)
_MESSAGES = {ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
             ErrorCode.REQUEST_TIMED_OUT: "The request timed out."}


def _error(request: Any, error: ErrorCode) -> Any:
    """Kafka's DescribeQuorumResponse.getTopLevelErrorResponse: the top-level error with its message, no topics."""
    return response_for(request, error_code=error, error_message=_MESSAGES[error], topics=[], nodes=[])
