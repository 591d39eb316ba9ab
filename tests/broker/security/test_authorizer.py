"""The ACL authorizer's decisions (Kafka's AclAuthorizer rules), without a store, sockets or a broker."""

from __future__ import annotations

from broker.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from broker.security.authorizer import AclAuthorizer, parse_super_users

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"
Op, T = AclOperation, ResourceType
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY


def grant(authz: AclAuthorizer, rtype: ResourceType, name: str, principal: str, op: AclOperation,
          permission: PermissionType = ALLOW, host: str = "*", pattern: PatternType = PatternType.LITERAL) -> None:
    p = ResourcePattern(rtype, name, pattern)
    authz.set_acls(p, authz.current(p) | {AccessControlEntry(principal, host, op, permission)})


def can(authz: AclAuthorizer, principal: str, op: AclOperation, rtype: ResourceType, name: str,
        host: str = HOST) -> bool:
    return authz.authorize(principal, host, op, rtype, name)


def test_no_acl_refuses_unless_allow_everyone_if_no_acl_found():
    assert not can(AclAuthorizer(), ALICE, Op.READ, T.TOPIC, "t")
    assert can(AclAuthorizer(allow_everyone_if_no_acl_found=True), ALICE, Op.READ, T.TOPIC, "t")


def test_an_acl_on_the_resource_takes_it_out_of_allow_everyone():
    authz = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    grant(authz, T.TOPIC, "t", BOB, Op.READ)
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "t")  # an ACL exists: only it decides
    assert can(authz, BOB, Op.READ, T.TOPIC, "t")
    assert can(authz, ALICE, Op.READ, T.TOPIC, "other")


def test_super_users_pass_everything():
    authz = AclAuthorizer(parse_super_users("User:admin; User:ops"))
    grant(authz, T.TOPIC, "t", "User:admin", Op.ALL, DENY)
    assert can(authz, "User:admin", Op.WRITE, T.TOPIC, "t")
    assert can(authz, "User:ops", Op.CLUSTER_ACTION, T.CLUSTER, "kafka-cluster")
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "t")


def test_literal_prefixed_and_wildcard_patterns():
    authz = AclAuthorizer()
    grant(authz, T.TOPIC, "orders", ALICE, Op.READ)
    grant(authz, T.TOPIC, "logs-", ALICE, Op.WRITE, pattern=PatternType.PREFIXED)
    grant(authz, T.GROUP, "*", ALICE, Op.READ)
    assert can(authz, ALICE, Op.READ, T.TOPIC, "orders")
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "orders-2")  # literal is exact
    assert can(authz, ALICE, Op.WRITE, T.TOPIC, "logs-app")
    assert can(authz, ALICE, Op.WRITE, T.TOPIC, "logs-")
    assert not can(authz, ALICE, Op.WRITE, T.TOPIC, "logs")
    assert can(authz, ALICE, Op.READ, T.GROUP, "any-group")
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "any-group")  # the wildcard is per resource type


def test_deny_beats_allow_whatever_the_pattern():
    authz = AclAuthorizer()
    grant(authz, T.TOPIC, "*", ALICE, Op.ALL)
    grant(authz, T.TOPIC, "secret-", ALICE, Op.READ, DENY, pattern=PatternType.PREFIXED)
    assert can(authz, ALICE, Op.READ, T.TOPIC, "public")
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "secret-plans")
    assert can(authz, ALICE, Op.WRITE, T.TOPIC, "secret-plans")  # the deny names READ only
    grant(authz, T.TOPIC, "public", "User:*", Op.ALL, DENY)
    assert not can(authz, ALICE, Op.WRITE, T.TOPIC, "public")  # User:* denies everyone


def test_implied_operations_are_allowed_but_never_denied_by_implication():
    authz = AclAuthorizer()
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        grant(authz, T.TOPIC, f"t-{op.name}", ALICE, op)
        assert can(authz, ALICE, Op.DESCRIBE, T.TOPIC, f"t-{op.name}")
    grant(authz, T.TOPIC, "c", ALICE, Op.ALTER_CONFIGS)
    assert can(authz, ALICE, Op.DESCRIBE_CONFIGS, T.TOPIC, "c")
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "t-WRITE")  # WRITE does not imply READ
    grant(authz, T.TOPIC, "d", ALICE, Op.ALL)
    grant(authz, T.TOPIC, "d", ALICE, Op.READ, DENY)
    assert can(authz, ALICE, Op.DESCRIBE, T.TOPIC, "d")  # a READ deny does not deny DESCRIBE


def test_hosts_and_principals_must_match():
    authz = AclAuthorizer()
    grant(authz, T.TOPIC, "t", ALICE, Op.READ, host="10.0.0.9")
    assert not can(authz, ALICE, Op.READ, T.TOPIC, "t")
    assert can(authz, ALICE, Op.READ, T.TOPIC, "t", host="10.0.0.9")
    assert not can(authz, BOB, Op.READ, T.TOPIC, "t", host="10.0.0.9")


def test_authorized_operations_lists_the_supported_ones_allowed():
    authz = AclAuthorizer()
    grant(authz, T.GROUP, "g", ALICE, Op.READ)
    assert authz.authorized_operations(ALICE, HOST, T.GROUP, "g") == {int(Op.READ), int(Op.DESCRIBE)}


def test_authorize_by_resource_type_as_kafka():
    authz = AclAuthorizer()
    assert not authz.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)
    grant(authz, T.TOPIC, "t", ALICE, Op.WRITE)
    assert authz.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)
    grant(authz, T.TOPIC, "t", ALICE, Op.WRITE, DENY, pattern=PatternType.PREFIXED)  # shadows the literal
    assert not authz.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)
    grant(authz, T.TOPIC, "other-", ALICE, Op.WRITE, pattern=PatternType.PREFIXED)
    assert authz.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)
    grant(authz, T.TOPIC, "*", ALICE, Op.WRITE, DENY)
    assert not authz.authorize_by_resource_type(ALICE, HOST, Op.WRITE, T.TOPIC)


def test_filters_match_as_kafkas():
    literal = ResourcePattern(T.TOPIC, "orders", PatternType.LITERAL)
    wildcard = ResourcePattern(T.TOPIC, "*", PatternType.LITERAL)
    prefixed = ResourcePattern(T.TOPIC, "ord", PatternType.PREFIXED)
    other = ResourcePattern(T.GROUP, "orders", PatternType.LITERAL)

    def f(rtype: ResourceType = T.ANY, name: str | None = None, pattern: PatternType = PatternType.ANY,
          **entry: object) -> AclBindingFilter:
        values = dict(principal=None, host=None, operation=Op.ANY, permission_type=PermissionType.ANY)
        values.update(entry)
        return AclBindingFilter(rtype, name, pattern, **values)  # type: ignore[arg-type]

    match = f(T.TOPIC, "orders", PatternType.MATCH)
    assert [match.matches_pattern(p) for p in (literal, wildcard, prefixed, other)] == [True, True, True, False]
    exact_any = f(T.ANY, "orders", PatternType.ANY)
    assert [exact_any.matches_pattern(p) for p in (literal, wildcard, prefixed, other)] == [True, False, False, True]
    assert f(pattern=PatternType.PREFIXED).matches_pattern(prefixed)
    assert not f(pattern=PatternType.PREFIXED).matches_pattern(literal)
    entry = AccessControlEntry(ALICE, "*", Op.READ, ALLOW)
    assert f(principal=ALICE, operation=Op.READ).matches(AclBinding(literal, entry))
    assert not f(principal=BOB).matches(AclBinding(literal, entry))
    assert not f(permission_type=DENY).matches(AclBinding(literal, entry))


def test_describe_lists_what_the_filter_matches_in_a_stable_order():
    authz = AclAuthorizer()
    grant(authz, T.TOPIC, "b", ALICE, Op.READ)
    grant(authz, T.TOPIC, "a", BOB, Op.WRITE)
    grant(authz, T.GROUP, "g", ALICE, Op.READ)
    everything = AclBindingFilter(T.ANY, None, PatternType.ANY, None, None, Op.ANY, PermissionType.ANY)
    assert [(b.pattern.name, b.entry.principal) for b in authz.acls(everything)] == [
        ("a", BOB), ("b", ALICE), ("g", ALICE)]
    alice = AclBindingFilter(T.ANY, None, PatternType.ANY, ALICE, None, Op.ANY, PermissionType.ANY)
    assert [b.pattern.name for b in authz.acls(alice)] == ["b", "g"]
