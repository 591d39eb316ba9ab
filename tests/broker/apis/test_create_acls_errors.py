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
}

test_errors = error_path_test(create_acls, PRODUCERS)
