"""AlterClientQuotas: every code of `broker.apis.alter_client_quotas.ERRORS`, over a real socket with our codec;
validate_only and removal."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_client_quotas
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test
from .test_describe_client_quotas_errors import describe

Req = request_class(ApiKey.ALTER_CLIENT_QUOTAS)
E = Req.EntryData


def alter(b: Brokers, entity: list[tuple[str, str | None]], ops: list[tuple[str, float, bool]],
          validate_only: bool = False, port: int | None = None) -> Any:
    return b.call(Req[1](entries=[E(entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                                    ops=[E.OpData(key=k, value=v, remove=r) for k, v, r in ops])],
                         validate_only=validate_only), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: alter(b, [("user", "x")], [("no_such_quota", 1, False)]),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: alter(b, [("user", "x")], [("producer_byte_rate", 1, False)],
                                                            port=denied(b)),
    # A KRaft broker sends it on to the controller, which has gone.
    ErrorCode.REQUEST_TIMED_OUT: lambda b: alter(b, [("user", "x")], [("producer_byte_rate", 1, False)],
                                                 port=b.kraft_without_controller()),
    # 10,001 ops: a record each in Kafka's controller, over its 10,000 per operation; nothing is stored
    ErrorCode.POLICY_VIOLATION: lambda b: alter(b, [("user", "quota-bound")],
                                                [("producer_byte_rate", 1, False)] * 10_001),
}

test_errors = error_path_test(alter_client_quotas, PRODUCERS)


def test_invalid_entries_and_messages(brokers: Brokers) -> None:
    cases = [
        ([("user", "x")], [("producer_byte_rate", 1.5, False)],
         "Configuration producer_byte_rate must be a LONG value"),
        ([("user", "x"), ("user", "y")], [("producer_byte_rate", 1, False)], "Duplicate user entity type"),
        ([("ip", "1.2.3.4")], [("connection_creation_rate", 1, False)], "IP quotas"),
        ([], [("producer_byte_rate", 1, False)], "Invalid client quota entity"),
    ]
    for entity, ops, message in cases:
        [entry] = alter(brokers, entity, ops).entries
        assert entry.error_code == ErrorCode.INVALID_REQUEST and message in entry.error_message, entry


def test_validate_only_stores_nothing_and_remove_removes(brokers: Brokers) -> None:
    user = [("user", "alter-quota-user")]
    assert alter(brokers, user, [("producer_byte_rate", 100, False)], validate_only=True).entries[0].error_code == 0
    assert describe(brokers, ("user", 0, "alter-quota-user"), strict=True).entries == []
    assert alter(brokers, user, [("producer_byte_rate", 100, False), ("request_percentage", 25, False)]) \
        .entries[0].error_code == 0
    assert alter(brokers, user, [("producer_byte_rate", 0, True)]).entries[0].error_code == 0
    [entry] = describe(brokers, ("user", 0, "alter-quota-user"), strict=True).entries
    assert {v.key: v.value for v in entry.values} == {"request_percentage": 25.0}


def test_more_than_ten_thousand_ops_store_nothing(brokers: Brokers) -> None:
    [entry] = alter(brokers, [("user", "quota-bound")], [("producer_byte_rate", 1, False)] * 10_001).entries
    assert (entry.error_code, entry.error_message) == (ErrorCode.POLICY_VIOLATION,
                                                       "Unable to perform excessively large batch operation.")
    assert describe(brokers, ("user", 0, "quota-bound"), strict=True).entries == []
