"""DeleteAcls (key 31), versions 0–3.

Deletes the stored ACLs each filter matches and answers, per filter, the ACLs it deleted (an ACL two
filters match is reported by the first). Needs ALTER on the cluster (every filter result
CLUSTER_AUTHORIZATION_FAILED otherwise); SECURITY_DISABLED without an authorizer. An UNKNOWN (0) element
closes the connection as Kafka's request parser does; v0 reads pattern type ANY as LITERAL, as Kafka does.
KRaft mode (`process.roles=broker`): after those checks the request goes on to the controller as it came
(broker/kraft/admin.py `forward`), which answers the matching ACLs and writes RemoveAccessControlEntryRecords; an
unreachable controller: REQUEST_TIMED_OUT for every filter.
"""

from __future__ import annotations

from typing import Any

from broker.apis import acl_common
from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclBindingFilter, AclOperation, PatternType
from protocol.errors import ErrorCode

API_KEY = 31
MIN_VERSION = 0
MAX_VERSION = 3
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.SECURITY_DISABLED,
                                 ErrorCode.REQUEST_TIMED_OUT)


def handle(ctx: RequestContext, request: Any) -> Any:
    FilterResult = response_type(request).DeleteAclsFilterResult
    refused = acl_common.refusal(ctx, AclOperation.ALTER)
    if refused is not None:
        return response_for(request, throttle_time_ms=0, filter_results=[
            FilterResult(error_code=refused[0], error_message=refused[1], matching_acls=[])
            for _ in request.filters])
    filters: list[AclBindingFilter] = []
    for f in request.filters:
        pattern_type = acl_common.pattern_type_of(f, request.API_VERSION, "pattern_type_filter")
        if request.API_VERSION == 0 and pattern_type == PatternType.ANY:
            pattern_type = int(PatternType.LITERAL)
        if acl_common.has_unknown(f.resource_type_filter, pattern_type, f.operation, f.permission_type):
            acl_common.close_for_unknown(ctx, "DeleteAclsRequest")
            return None
        filters.append(acl_common.binding_filter(f, pattern_type))
    return _delete(ctx, request, filters, FilterResult)


async def _delete(ctx: RequestContext, request: Any, filters: list[AclBindingFilter], FilterResult: Any) -> Any:
    if ctx.server.config.is_kraft:  # the controller removes the ACL records (broker/kraft/admin.py)
        forwarded = await ctx.server.controller.admin.forward(request)
        if forwarded is not None:
            return forwarded
        return response_for(request, throttle_time_ms=0, filter_results=[
            FilterResult(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message="The controller could not be reached.",
                         matching_acls=[]) for _ in filters])
    assert ctx.server.authorizer is not None
    deleted = await ctx.server.authorizer.delete_acls(filters)
    Matching = FilterResult.DeleteAclsMatchingAcl
    results = []
    for per_filter in deleted:
        matching = []
        for r in per_filter:
            p, e = r.binding.pattern, r.binding.entry
            code, message = (0, None) if r.error is None else (ErrorCode.UNKNOWN_SERVER_ERROR, str(r.error))
            matching.append(Matching(error_code=code, error_message=message, resource_type=int(p.resource_type),
                                     resource_name=p.name, pattern_type=int(p.pattern_type),
                                     principal=e.principal, host=e.host, operation=int(e.operation),
                                     permission_type=int(e.permission_type)))
        results.append(FilterResult(error_code=0, error_message=None, matching_acls=matching))
    return response_for(request, throttle_time_ms=0, filter_results=results)
