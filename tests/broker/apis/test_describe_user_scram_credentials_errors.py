"""DescribeUserScramCredentials: every code of `broker.apis.describe_user_scram_credentials.ERRORS`, over a real
socket with our codec; and what a described user's result carries."""

from __future__ import annotations

from broker.apis import describe_user_scram_credentials
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)


def _describe(b: Brokers, *users: str, port: int | None = None) -> object:
    return b.call(Req[0](users=[Req.UserName(name=u) for u in users]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.RESOURCE_NOT_FOUND: lambda b: _describe(b, "nobody-has-credentials"),
    ErrorCode.DUPLICATE_RESOURCE: lambda b: _describe(b, "twice", "twice"),
    # The authorizer on, nothing granted: DESCRIBE on the cluster is refused (top level and each user).
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: _describe(b, "alice", port=denied(b)),
}

test_errors = error_path_test(describe_user_scram_credentials, PRODUCERS)


def test_messages_are_kafkas(brokers: Brokers) -> None:
    results = _describe(brokers, "", "ghost", "dup", "dup").results
    assert [(r.user, r.error_code, r.error_message) for r in results] == [
        ("", ErrorCode.RESOURCE_NOT_FOUND, "Username must not be empty"),
        ("ghost", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: ghost"),
        ("dup", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: dup"),
    ]


def test_refused_without_describe_on_the_cluster(brokers: Brokers) -> None:
    response = _describe(brokers, "alice", "bob", port=denied(brokers))
    assert (response.error_code, response.error_message) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                             "Cluster authorization failed.")
    assert [r.error_code for r in response.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 2
