"""DescribeAcls (key 29), versions 0–3.

The ACLs matching the request's filter, grouped by resource pattern. Needs DESCRIBE on the cluster
(CLUSTER_AUTHORIZATION_FAILED otherwise); SECURITY_DISABLED without an authorizer. An UNKNOWN (0) element
closes the connection as Kafka's request parser does (broker/apis/acl_common.py); v0 reads pattern type ANY
as LITERAL, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from broker.apis import acl_common
from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation, PatternType
from protocol.errors import ErrorCode

API_KEY = 29
MIN_VERSION = 0
MAX_VERSION = 3
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.SECURITY_DISABLED)


def handle(ctx: RequestContext, request: Any) -> Any:
    refused = acl_common.refusal(ctx, AclOperation.DESCRIBE)
    if refused is not None:
        return response_for(request, throttle_time_ms=0, error_code=refused[0], error_message=refused[1],
                            resources=[])
    pattern_type = acl_common.pattern_type_of(request, request.API_VERSION, "pattern_type_filter")
    if request.API_VERSION == 0 and pattern_type == PatternType.ANY:
        pattern_type = int(PatternType.LITERAL)
    if acl_common.has_unknown(request.resource_type_filter, pattern_type, request.operation,
                              request.permission_type):
        acl_common.close_for_unknown(ctx, "DescribeAclsRequest")
        return None
    flt = acl_common.binding_filter(request, pattern_type)
    assert ctx.server.authorizer is not None
    Resp = response_type(request)
    resources: list[Any] = []
    for binding in ctx.server.authorizer.acls(flt):
        p, e = binding.pattern, binding.entry
        if not resources or (resources[-1].resource_type, resources[-1].resource_name,
                             resources[-1].pattern_type) != (p.resource_type, p.name, p.pattern_type):
            resources.append(Resp.DescribeAclsResource(resource_type=int(p.resource_type), resource_name=p.name,
                                                       pattern_type=int(p.pattern_type), acls=[]))
        resources[-1].acls.append(Resp.DescribeAclsResource.AclDescription(
            principal=e.principal, host=e.host, operation=int(e.operation), permission_type=int(e.permission_type)))
    return response_for(request, throttle_time_ms=0, error_code=0, error_message=None, resources=resources)
