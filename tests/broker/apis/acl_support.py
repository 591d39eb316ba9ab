"""Brokers with the ACL authorizer for the error-path tests, and requests that refuse or allow on them.

- `denied(b)`: the authorizer on, no super users, no ACLs, `allow.everyone.if.no.acl.found=false`: every
  check refuses (Kafka's secure default).
- `partial(b)`: the authorizer on with `allow.everyone.if.no.acl.found=true`, and a DENY for every
  principal on topics, groups and transactional ids prefixed `denied-`: everything else passes. The ACLs are
  created through CreateAcls (CLUSTER has no ACL, so ALTER on it is allowed).
"""

from __future__ import annotations

from typing import Any

from broker.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Brokers

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
DENIED_TOPIC = "denied-topic"
DENIED_GROUP = "denied-group"
DENIED_TXN = "denied-txn"


def denied(b: Brokers) -> int:
    return b.other(**{"authorizer.class.name": ACL_AUTHORIZER}).port


def partial(b: Brokers) -> int:
    port = b.other(**{"authorizer.class.name": ACL_AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}).port
    Req = request_class(ApiKey.CREATE_ACLS)
    creations = [Req.AclCreation(resource_type=rtype, resource_name="denied-",
                                 resource_pattern_type=PatternType.PREFIXED, principal="User:*", host="*",
                                 operation=AclOperation.ALL, permission_type=PermissionType.DENY)
                 for rtype in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)]
    response = b.call(Req[3](creations=creations), port)
    assert {r.error_code for r in response.results} == {ErrorCode.NONE}, response
    return port


def acl_filter(Req: Any, **fields: Any) -> dict[str, Any]:
    """A filter matching everything, with `fields` replaced (DescribeAcls and DeleteAcls share the names)."""
    values = dict(resource_type_filter=ResourceType.ANY, resource_name_filter=None,
                  pattern_type_filter=PatternType.ANY, principal_filter=None, host_filter=None,
                  operation=AclOperation.ANY, permission_type=PermissionType.ANY)
    values.update(fields)
    return values


def deny_topic_describe(b: Brokers, port: int, topic: str) -> None:
    """A DENY of DESCRIBE on `topic` (literal) for every principal, added after the fact: a group formed on
    it while it was allowed keeps naming it."""
    Req = request_class(ApiKey.CREATE_ACLS)
    response = b.call(Req[3](creations=[Req.AclCreation(
        resource_type=ResourceType.TOPIC, resource_name=topic, resource_pattern_type=PatternType.LITERAL,
        principal="User:*", host="*", operation=AclOperation.DESCRIBE, permission_type=PermissionType.DENY)]), port)
    assert [r.error_code for r in response.results] == [ErrorCode.NONE], response


def allow_topic_describe(b: Brokers, port: int, topic: str) -> None:
    """Removes `deny_topic_describe`'s ACL."""
    Req = request_class(ApiKey.DELETE_ACLS)
    response = b.call(Req[3](filters=[Req.DeleteAclsFilter(**acl_filter(
        Req, resource_type_filter=ResourceType.TOPIC, resource_name_filter=topic,
        pattern_type_filter=PatternType.LITERAL, operation=AclOperation.DESCRIBE))]), port)
    assert [len(r.matching_acls) for r in response.filter_results] == [1], response
