"""CreateAcls: every code of `broker.apis.create_acls.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import create_acls
from broker.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied, partial
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.CREATE_ACLS)


def send(b: Brokers, port: int | None = None, resource_type: int = ResourceType.TOPIC, name: str = "t") -> Any:
    return b.call(Req[3](creations=[Req.AclCreation(
        resource_type=resource_type, resource_name=name, resource_pattern_type=PatternType.LITERAL,
        principal="User:alice", host="*", operation=AclOperation.READ, permission_type=PermissionType.ALLOW)]),
        port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.SECURITY_DISABLED: lambda b: send(b),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, denied(b)),
    # Kafka: "The only valid name for the CLUSTER resource is kafka-cluster"
    ErrorCode.INVALID_REQUEST: lambda b: send(b, partial(b), ResourceType.CLUSTER, "not-the-cluster"),
    # A KRaft broker sends it on to the controller, which has gone.
    ErrorCode.REQUEST_TIMED_OUT: lambda b: send(b, b.kraft_without_controller()),
    ErrorCode.POLICY_VIOLATION: lambda b: too_many(b, partial(b), 10_001),
}


def too_many(b: Brokers, port: int, count: int) -> Any:
    return b.call(Req[3](creations=[Req.AclCreation(
        resource_type=ResourceType.TOPIC, resource_name=f"bound-{i}", resource_pattern_type=PatternType.LITERAL,
        principal="User:alice", host="*", operation=AclOperation.READ, permission_type=PermissionType.ALLOW)
        for i in range(count)]), port)


def test_ten_thousand_new_acls_pass_and_one_more_is_refused_whole(brokers: Brokers) -> None:
    """Kafka's controller counts distinct new valid ACLs: 10,001 creations of one ACL are one, and 10,001 new ones
    are refused, each POLICY_VIOLATION with Kafka's message, and none is stored."""
    port = partial(brokers)
    same = brokers.call(Req[3](creations=[Req.AclCreation(
        resource_type=ResourceType.TOPIC, resource_name="bound-same", resource_pattern_type=PatternType.LITERAL,
        principal="User:alice", host="*", operation=AclOperation.READ, permission_type=PermissionType.ALLOW)] * 10_001),
        port).results
    assert {r.error_code for r in same} == {ErrorCode.NONE} and len(same) == 10_001
    refused = too_many(brokers, port, 10_001).results
    assert {(r.error_code, r.error_message) for r in refused} == {
        (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")}
    DescribeReq = request_class(ApiKey.DESCRIBE_ACLS)
    described = brokers.call(DescribeReq[3](
        resource_type_filter=ResourceType.TOPIC, resource_name_filter="bound-1", pattern_type_filter=PatternType.ANY,
        principal_filter=None, host_filter=None, operation=AclOperation.ANY, permission_type=PermissionType.ANY), port)
    assert described.resources == []

test_errors = error_path_test(create_acls, PRODUCERS)
