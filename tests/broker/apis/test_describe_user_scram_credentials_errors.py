"""DescribeUserScramCredentials: every code of `broker.apis.describe_user_scram_credentials.ERRORS`, over a real
socket with our codec; and what a described user's result carries."""

from __future__ import annotations

from broker.apis import describe_user_scram_credentials
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)


def _describe(b: Brokers, *users: str) -> object:
    return b.call(Req[0](users=[Req.UserName(name=u) for u in users]))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.RESOURCE_NOT_FOUND: lambda b: _describe(b, "nobody-has-credentials"),
    ErrorCode.DUPLICATE_RESOURCE: lambda b: _describe(b, "twice", "twice"),
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
