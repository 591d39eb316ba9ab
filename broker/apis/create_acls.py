"""CreateAcls (key 30), versions 0–3.

Stores each ACL in the metadata store (broker/security/acl_store.py: Kafka's ZooKeeper layout) and answers
one result per creation, in order. Needs ALTER on the cluster (every result CLUSTER_AUTHORIZATION_FAILED
otherwise); SECURITY_DISABLED without an authorizer. INVALID_REQUEST for a CLUSTER resource not named
`kafka-cluster`, an empty resource name, a name with `/`, a code Kafka does not know, or ANY/MATCH where a
concrete value is needed. An UNKNOWN (0) element closes the connection as Kafka's request parser does.
KRaft mode (`process.roles=broker`): after the checks up to the UNKNOWN elements, the request goes on to the
controller as it came (broker/kraft/admin.py `forward`), which validates and writes AccessControlEntryRecords;
every broker's authorizer takes them from the metadata log. An unreachable controller: REQUEST_TIMED_OUT for
every creation.
More than 10,000 new ACLs in one request (distinct, valid, not stored yet: the records Kafka's controller would
write, `broker.controller.limits`) are refused whole, every creation POLICY_VIOLATION "Unable to perform
excessively large batch operation.", as Kafka's controller refuses them; nothing is stored.
"""

from __future__ import annotations

from typing import Any

from broker.apis import acl_common
from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.limits import EXCESSIVE_BATCH, too_many_records
from broker.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    code_of,
)
from protocol.errors import ErrorCode

API_KEY = 30
MIN_VERSION = 0
MAX_VERSION = 3
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.SECURITY_DISABLED,
                                 ErrorCode.INVALID_REQUEST, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.POLICY_VIOLATION)


def handle(ctx: RequestContext, request: Any) -> Any:
    Result = response_type(request).AclCreationResult
    refused = acl_common.refusal(ctx, AclOperation.ALTER)
    if refused is not None:
        return response_for(request, throttle_time_ms=0, results=[
            Result(error_code=refused[0], error_message=refused[1]) for _ in request.creations])
    bindings = []
    for c in request.creations:
        pattern_type = acl_common.pattern_type_of(c, request.API_VERSION, "resource_pattern_type")
        if acl_common.has_unknown(c.resource_type, pattern_type, c.operation, c.permission_type):
            acl_common.close_for_unknown(ctx, "CreateAclsRequest")
            return None
        bindings.append(AclBinding(
            ResourcePattern(code_of(ResourceType, c.resource_type), c.resource_name,
                            code_of(PatternType, pattern_type)),
            AccessControlEntry(c.principal, c.host, code_of(AclOperation, c.operation),
                               code_of(PermissionType, c.permission_type))))
    return _create(ctx, request, bindings, Result)


async def _create(ctx: RequestContext, request: Any, bindings: list[AclBinding], Result: Any) -> Any:
    if ctx.server.config.is_kraft:  # the controller validates and writes the ACL records (broker/kraft/admin.py)
        forwarded = await ctx.server.controller.admin.forward(request)
        if forwarded is not None:
            return forwarded
        return response_for(request, throttle_time_ms=0, results=[
            Result(error_code=ErrorCode.REQUEST_TIMED_OUT, error_message="The controller could not be reached.")
            for _ in bindings])
    assert ctx.server.authorizer is not None
    if too_many_records(ctx.server.authorizer.count_new(bindings)):  # Kafka's controller refuses the whole request
        return response_for(request, throttle_time_ms=0, results=[
            Result(error_code=ErrorCode.POLICY_VIOLATION, error_message=EXCESSIVE_BATCH) for _ in bindings])
    results: list[Any] = [None] * len(bindings)
    valid: list[int] = []
    for i, binding in enumerate(bindings):
        pattern = binding.pattern
        if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
            results[i] = Result(error_code=ErrorCode.INVALID_REQUEST,
                                error_message=f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        elif not pattern.name:
            results[i] = Result(error_code=ErrorCode.INVALID_REQUEST, error_message="Invalid empty resource name")
        else:
            valid.append(i)
    errors = await ctx.server.authorizer.create_acls([bindings[i] for i in valid])
    for i, error in zip(valid, errors, strict=True):
        if error is None:
            results[i] = Result(error_code=0, error_message=None)
        else:
            code = ErrorCode.INVALID_REQUEST if error.invalid else ErrorCode.UNKNOWN_SERVER_ERROR
            results[i] = Result(error_code=code, error_message=str(error))
    return response_for(request, throttle_time_ms=0, results=results)
