"""What CreateAcls, DescribeAcls and DeleteAcls share: the cluster check, SECURITY_DISABLED, and filters.

Kafka answers each of the three, before anything else, with CLUSTER_AUTHORIZATION_FAILED unless the
principal may ALTER (create, delete) or DESCRIBE (describe) the cluster, then with SECURITY_DISABLED when no
authorizer is configured. A request naming an UNKNOWN (code 0) resource type, pattern type, operation or
permission type fails Kafka's request parser, which closes the connection; codes Kafka does not know read as
UNKNOWN and match nothing (describe, delete) or are refused with INVALID_REQUEST (create).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.security.acl import (
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
    code_of,
)
from protocol.errors import ErrorCode


def refusal(ctx: RequestContext, operation: AclOperation) -> tuple[ErrorCode, str] | None:
    """(error, message) the whole request is answered with, or None to go on."""
    if not ctx.authorize_cluster(operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    if ctx.server.authorizer is None:
        return ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker"
    return None


def has_unknown(*codes: int) -> bool:
    return 0 in codes


def close_for_unknown(ctx: RequestContext, what: str) -> None:
    if ctx.connection is not None:
        ctx.connection.close(f"{what} contains UNKNOWN elements")


def binding_filter(f: Any, pattern_type: int) -> AclBindingFilter:
    """The filter of a DescribeAcls request or a DeleteAcls filter (their fields share names)."""
    return AclBindingFilter(code_of(ResourceType, f.resource_type_filter), f.resource_name_filter,
                            code_of(PatternType, pattern_type), f.principal_filter, f.host_filter,
                            code_of(AclOperation, f.operation), code_of(PermissionType, f.permission_type))


def pattern_type_of(f: Any, version: int, field: str) -> int:
    """v0 has no pattern type: LITERAL (Kafka's older brokers knew no other)."""
    return getattr(f, field) if version >= 1 else int(PatternType.LITERAL)
