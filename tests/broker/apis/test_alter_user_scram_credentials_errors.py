"""AlterUserScramCredentials: every code of `broker.apis.alter_user_scram_credentials.ERRORS`, over a real
socket with our codec, with Kafka's messages; and a successful upsert then delete, read back with
DescribeUserScramCredentials."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_user_scram_credentials
from broker.security.credentials import CredentialStore
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
Describe = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
SHA256, SHA512 = 1, 2


def _up(name: str, mechanism: int = SHA256, iterations: int = 4096) -> Any:
    return Req.ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=b"salt" * 8,
                                        salted_password=b"\x01" * 32)


def _del(name: str, mechanism: int = SHA256) -> Any:
    return Req.ScramCredentialDeletion(name=name, mechanism=mechanism)


def _alter(b: Brokers, upsertions: list, deletions: list, port: int | None = None) -> Any:
    return b.call(Req[0](upsertions=upsertions, deletions=deletions), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.NOT_CONTROLLER: lambda b: _alter(b, [_up("anyone")], [], b.not_controller_port()),
    ErrorCode.UNACCEPTABLE_CREDENTIAL: lambda b: _alter(b, [_up("few", iterations=100)], []),
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: lambda b: _alter(b, [_up("odd", mechanism=7)], []),
    ErrorCode.DUPLICATE_RESOURCE: lambda b: _alter(b, [_up("twice")], [_del("twice")]),
    ErrorCode.RESOURCE_NOT_FOUND: lambda b: _alter(b, [], [_del("never-stored")]),
    # The authorizer on, nothing granted: ALTER on the cluster is refused, nothing is stored.
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: _alter(b, [_up("mallory")], [], denied(b)),
    # A KRaft broker sends it on to the controller, which has gone.
    ErrorCode.REQUEST_TIMED_OUT: lambda b: _alter(b, [_up("bob")], [], b.kraft_without_controller()),
}

test_errors = error_path_test(alter_user_scram_credentials, PRODUCERS)


def test_messages_are_kafkas(brokers: Brokers) -> None:
    results = _alter(brokers, [_up(""), _up("few", iterations=4095), _up("many", iterations=16385),
                               _up("odd", mechanism=0)], []).results
    assert sorted((r.user, r.error_code, r.error_message) for r in results) == [
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        ("few", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("many", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        ("odd", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    ]


def test_upsert_describe_delete(brokers: Brokers) -> None:
    results = _alter(brokers, [_up("carol", SHA256, 4096), _up("carol", SHA512, 8192)], []).results
    assert [(r.user, r.error_code) for r in results] == [("carol", ErrorCode.NONE)]
    described = brokers.call(Describe[0](users=[Describe.UserName(name="carol")])).results[0]
    assert described.error_code == ErrorCode.NONE
    assert sorted((c.mechanism, c.iterations) for c in described.credential_infos) == [(SHA256, 4096), (SHA512, 8192)]
    assert _alter(brokers, [], [_del("carol", SHA512)]).results[0].error_code == ErrorCode.NONE
    described = brokers.call(Describe[0](users=[Describe.UserName(name="carol")])).results[0]
    assert [(c.mechanism, c.iterations) for c in described.credential_infos] == [(SHA256, 4096)]
    everyone = brokers.call(Describe[0](users=None)).results
    assert "carol" in [r.user for r in everyone]


def test_refused_without_alter_on_the_cluster_stores_nothing(brokers: Brokers) -> None:
    port = denied(brokers)
    results = _alter(brokers, [_up("zed"), _up("mallory")], [_del("mallory", SHA512)], port).results
    assert [(r.user, r.error_code, r.error_message) for r in results] == [
        ("mallory", ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
        ("zed", ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    ]
    other = brokers.other(**{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    stored = other.call(lambda: CredentialStore(other.server.controller.store).users())
    assert "mallory" not in stored and "zed" not in stored
