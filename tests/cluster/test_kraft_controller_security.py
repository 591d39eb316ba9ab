"""A KRaft broker of ours reaching the controller quorum over TLS and SASL (controller listener SSL, SASL_SSL,
SASL_PLAINTEXT), with the client-side TLS and SASL of its inter-broker connections, against the test controller
listening with TLS and/or SASL PLAIN: registration, the metadata log, topic creation through the controller,
produce and consume."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.config.kafka_config import KafkaConfig
from broker.kraft.format import format_dirs
from broker.testing import EmbeddedBroker
from protocol import ApiKey
from tests.cluster.test_kraft_cluster import FAST, produce_and_consume
from tests.kraft_controller import ControllerThread
from tests.security.support import Pki

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.make(tmp_path_factory.mktemp("pki"))


def server_context(pki: Pki) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki.server)
    return ctx


@pytest.fixture
def tls_controller(pki: Pki, request: pytest.FixtureRequest) -> Iterator[ControllerThread]:
    users = getattr(request, "param", None)
    c = ControllerThread(session_timeout_ms=1500, ssl_context=server_context(pki), sasl_users=users).start()
    yield c
    c.stop()


def start_broker(tmp_path: Path, controller: ControllerThread, node_id: int, **extra: str) -> EmbeddedBroker:
    data = tmp_path / f"kraft{node_id}"
    props = {"process.roles": "broker", "node.id": str(node_id), "controller.quorum.voters": controller.voters,
             "controller.listener.names": "CONTROLLER", **FAST, "offsets.topic.replication.factor": "1", **extra}
    b = EmbeddedBroker(props, data_dir=data)
    format_dirs(KafkaConfig(b.props), controller.call(lambda c: c.cluster_id), out=open("/dev/null", "w"))  # noqa: SIM115
    return b


def tls_props(pki: Pki, protocol: str) -> dict[str, str]:
    return {"listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,CONTROLLER:{protocol}",
            "listener.name.controller.ssl.truststore.type": "PEM",
            "listener.name.controller.ssl.truststore.location": str(pki.ca)}


def test_a_broker_reaches_the_controller_over_tls(tmp_path: Path, pki: Pki,
                                                  tls_controller: ControllerThread) -> None:
    b = start_broker(tmp_path, tls_controller, 1, **tls_props(pki, "SSL")).start()
    try:
        assert not tls_controller.call(lambda c: c.image.cluster.broker(1).fenced)
        produce_and_consume(b.bootstrap, "over-tls", 5)  # auto-created: CreateTopics over TLS to the controller
        assert tls_controller.call(lambda c: c.image.topics.get_topic("over-tls")) is not None
    finally:
        b.stop()


PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"broker\" password=\"{}\";"


@pytest.mark.parametrize("tls_controller", [{"broker": "b-secret"}], indirect=True)
def test_a_broker_authenticates_to_the_controller_with_sasl_ssl(tmp_path: Path, pki: Pki,
                                                                tls_controller: ControllerThread) -> None:
    sasl = {**tls_props(pki, "SASL_SSL"), "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": PLAIN.format("b-secret")}
    b = start_broker(tmp_path, tls_controller, 1, **sasl).start()
    try:
        assert not tls_controller.call(lambda c: c.image.cluster.broker(1).fenced)
        produce_and_consume(b.bootstrap, "over-sasl-ssl", 5)
        assert tls_controller.call(lambda c: sum(k == ApiKey.SASL_AUTHENTICATE for k, _ in c.requests)) >= 2
    finally:
        b.stop()
    # A wrong password: the controller refuses it, the broker never registers and its start fails.
    wrong = start_broker(tmp_path, tls_controller, 2, **{**sasl, "initial.broker.registration.timeout.ms": "2000",
                         "listener.name.controller.plain.sasl.jaas.config": PLAIN.format("nope")})
    with pytest.raises(Exception, match="unable to register"):
        wrong.start()
    # A PLAINTEXT broker against the TLS listener does not get in either; a missing JAAS config refuses the start.
    bad = start_broker(tmp_path, tls_controller, 3, **{"listener.security.protocol.map":
                                                       "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_SSL",
                                                       "sasl.mechanism.controller.protocol": "PLAIN"})
    with pytest.raises(Exception, match="sasl.jaas.config needs the username and password"):
        bad.start()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_broker_authenticates_to_the_controller_with_sasl_plaintext(tmp_path: Path, mechanism: str) -> None:
    c = ControllerThread(session_timeout_ms=1500, sasl_users={"broker": "pt-secret"}).start()
    module = "org.apache.kafka.common.security.scram.ScramLoginModule" if mechanism != "PLAIN" else \
        "org.apache.kafka.common.security.plain.PlainLoginModule"
    try:
        b = start_broker(tmp_path, c, 1, **{
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "sasl.mechanism.controller.protocol": mechanism,
            f"listener.name.controller.{mechanism.lower()}.sasl.jaas.config":
                f'{module} required username="broker" password="pt-secret";'}).start()
        try:
            assert not c.call(lambda c: c.image.cluster.broker(1).fenced)
            produce_and_consume(b.bootstrap, "over-sasl-plaintext", 5)
            handshakes = c.call(lambda c: {r.mechanism for k, r in c.requests if k == ApiKey.SASL_HANDSHAKE})
            assert handshakes == {mechanism}
        finally:
            b.stop()
    finally:
        c.stop()
