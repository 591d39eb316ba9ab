"""DescribeClientQuotas: every code of `broker.apis.describe_client_quotas.ERRORS`, over a real socket with our
codec; and what a filter selects."""

from __future__ import annotations

from typing import Any

from broker.apis import describe_client_quotas
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_CLIENT_QUOTAS)
Alter = request_class(ApiKey.ALTER_CLIENT_QUOTAS)


def describe(b: Brokers, *components: tuple[str, int, str | None], strict: bool = False,
             port: int | None = None) -> Any:
    return b.call(Req[1](components=[Req.ComponentData(entity_type=t, match_type=m, match=n)
                                     for t, m, n in components], strict=strict), port)


def alter(b: Brokers, entity: list[tuple[str, str | None]], **quotas: float) -> Any:
    E = Alter.EntryData
    return b.call(Alter[1](entries=[E(entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                                      ops=[E.OpData(key=k, value=v, remove=False) for k, v in quotas.items()])],
                           validate_only=False))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: describe(b, ("user", 0, "a"), ("user", 0, "b")),
    ErrorCode.UNSUPPORTED_VERSION: lambda b: describe(b, ("team", 0, "a")),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: describe(b, port=denied(b)),
}

test_errors = error_path_test(describe_client_quotas, PRODUCERS)


def test_filters_select_as_kafka(brokers: Brokers) -> None:
    assert alter(brokers, [("user", "qa-user")], producer_byte_rate=1024).entries[0].error_code == 0
    assert alter(brokers, [("user", "qa-user"), ("client-id", "qa-app")], consumer_byte_rate=2048,
                 request_percentage=50.5).entries[0].error_code == 0
    assert alter(brokers, [("client-id", None)], producer_byte_rate=4096).entries[0].error_code == 0

    def entities(response: Any) -> list[tuple]:
        assert response.error_code == 0, response
        return [(tuple((e.entity_type, e.entity_name) for e in entry.entity),
                 {v.key: v.value for v in entry.values}) for entry in response.entries]

    exact = entities(describe(brokers, ("user", 0, "qa-user"), strict=True))
    assert exact == [((("user", "qa-user"),), {"producer_byte_rate": 1024.0})]
    both = entities(describe(brokers, ("user", 0, "qa-user")))  # not strict: with any client id too
    assert ((("user", "qa-user"), ("client-id", "qa-app")),
            {"consumer_byte_rate": 2048.0, "request_percentage": 50.5}) in both
    default_client = entities(describe(brokers, ("client-id", 1, None), strict=True))
    assert default_client == [((("client-id", None),), {"producer_byte_rate": 4096.0})]
    for bad in [("user", 0, None), ("user", 1, "x"), ("user", 7, None), ("", 2, None)]:
        assert describe(brokers, bad).error_code == ErrorCode.INVALID_REQUEST, bad
    assert describe(brokers, ("ip", 2, None), ("user", 2, None)).error_code == ErrorCode.INVALID_REQUEST
    assert entities(describe(brokers, ("ip", 2, None))) == []
