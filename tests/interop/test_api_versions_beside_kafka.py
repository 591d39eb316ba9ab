"""ApiVersions v5 (KIP-1242) with Kafka 4.4's own client: kafka-broker-api-versions.sh reads our ranges at v5, with
no UNSUPPORTED_VERSION round trip first (a Kafka 4.4 client names the cluster and node it means to reach, and we
check them as Kafka 4.4's brokers do)."""

from __future__ import annotations

import logging

import pytest

from broker.testing import EmbeddedBroker
from realkafka import KRAFT_KAFKA_LATEST, tools


def test_kafka_44s_client_asks_at_v5_and_gets_our_ranges(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="broker.server")
    with EmbeddedBroker() as broker:
        out = tools.run(KRAFT_KAFKA_LATEST, "kafka-broker-api-versions",
                        ["--bootstrap-server", f"127.0.0.1:{broker.port}"]).stdout
    assert "ApiVersions(18): 0 to 5 [usable: 5]" in out, out
    assert "Produce(0): 0 to 12 [usable: " in out
    assert not [r for r in caplog.records if "is not served" in r.getMessage()]
