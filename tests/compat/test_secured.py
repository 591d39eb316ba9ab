"""The compat scenarios against a secured target (compat.targets.SecuredTarget: SASL_SSL with SCRAM-SHA-512,
ACLs on): each stock client reaches it with its own security settings and every scenario that passes on the
plain target passes there too (the same GAPS.md rows apply); a principal without ACLs gets the authorization
error the client reports with Kafka."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat.clients import ADAPTERS
from compat.model import ProduceFailed, Record
from compat.runner import default_setup_adapter, run_one
from compat.targets import SecuredTarget
from tests.compat.test_matrix import judge

CLIENTS = ["confluent-kafka", "kafka-python", "aiokafka", "kcat"]
SCENARIOS = ["metadata", "produce_consume", "idempotent_producer", "group_consume", "commit_offsets_metadata",
             "list_offsets", "admin_topics", "admin_configs", "admin_groups", "transactions",
             "transactions_offsets"]
PAIRS = [(c, s) for c in CLIENTS for s in SCENARIOS]


@pytest.fixture(scope="module")
def secured_target() -> Iterator[SecuredTarget]:
    with SecuredTarget() as target:
        yield target


def test_clients_are_the_ones_named() -> None:
    assert set(CLIENTS) <= set(ADAPTERS)
    assert not ADAPTERS["java"].supports_security  # reported skipped on a secured target, not failed


@pytest.mark.parametrize(("client", "scenario"), PAIRS, ids=[f"{c}-{s}" for c, s in PAIRS])
def test_scenario_over_sasl_ssl(secured_target: SecuredTarget, client: str, scenario: str) -> None:
    judge(run_one(secured_target, ADAPTERS[client], scenario, setup_cls=default_setup_adapter(), timeout_s=10.0,
                  limit_s=60.0))


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_a_principal_without_acls_is_refused(secured_target: SecuredTarget, client: str) -> None:
    setup = ADAPTERS["confluent-kafka"](secured_target.bootstrap, 10.0, secured_target.security)
    stranger = ADAPTERS[client](secured_target.bootstrap, 10.0, secured_target.denied)
    try:
        setup.create_topic(f"secured-denied-{client}", 1)
        with pytest.raises((ProduceFailed, Exception)) as e:
            stranger.produce(f"secured-denied-{client}", [Record(key=b"k", value=b"v")], timeout_s=8)
        assert "TOPIC_AUTHORIZATION_FAILED" in str(e.value) or "TopicAuthorizationFailed" in str(e.value), e.value
    finally:
        stranger.close()
        setup.close()
