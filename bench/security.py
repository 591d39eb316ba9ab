"""Produce and consume over TLS and SASL next to PLAINTEXT on our broker (issue 15), a scenario of
`bench.scenarios`.

Contract: `SecurityScenario(count, reps)` starts one broker of the target's (ours, or a Kafka node for a `kafka`
target, with the same PEM stores and JAAS line) with three listeners — PLAINTEXT, SSL
(server TLS) and SASL_SSL (SASL/PLAIN over TLS) — with certificates made for the run (trustme). Each repetition
produces `count` 1 KiB messages to one partition through each listener (acks=1, linger.ms 5, batch.size 1 MiB)
and reads each topic back from earliest through the same listener, and reports MB/s per listener and the
ratio of each secured listener to PLAINTEXT (adjacent in time; the order rotates between repetitions). What it
shows: TLS costs encryption on both sides, and our fetch over TLS cannot use `sendfile` (docs/security.md),
so consume pays the most; beside Kafka, the ratios say whose TLS costs less. n/a for librdkafka's mock cluster (no
TLS listeners).
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.runner import LoadError, delete_topics, ensure_partitions, run_load
from bench.scenarios import KIB, MIB, Context, Metric, Scenario, Values, kafka_warmup_messages
from bench.targets import (
    AttachedTarget,
    KafkaProcess,
    KafkaTarget,
    OurBrokerCli,
    Target,
    warm_up_kafka,
)
from bench.wire import free_port

LISTENERS = ("PLAINTEXT", "SSL", "SASL_SSL")
USER, PASSWORD = "bench", "bench-secret"


def _write_key_store(cert: Any, path: Path) -> None:
    """The server's PEM key store: its private key as unencrypted PKCS#8 (Kafka's PEM key store reads no other
    form; trustme writes EC keys in SEC1) followed by its certificate chain."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    path.write_bytes(pkcs8 + b"".join(blob.bytes() for blob in cert.cert_chain_pems))


def _name(direction: str, listener: str) -> str:
    return f"{direction} {listener}"


class SecurityScenario(Scenario):
    profiled = False

    def __init__(self, count: int, reps: int) -> None:
        self.count = count
        self.reps = reps
        self.id = "TLS and SASL_SSL vs PLAINTEXT p=1"
        self.metrics = [Metric(_name(d, lst), "MB/s", True) for d in ("produce", "consume") for lst in LISTENERS]
        self.metrics += [Metric(f"{d} {lst} / PLAINTEXT", "x", True) for d in ("produce", "consume")
                         for lst in LISTENERS[1:]]

    def not_applicable(self, target: Target) -> str | None:
        if target.kind not in ("ours", "kafka"):
            return "starts a broker of its own with TLS listeners: ours or Kafka (librdkafka's mock cluster has none)"
        return None

    def _broker(self, target: Target, ctx: Context) -> tuple[Any, dict[str, dict[str, Any]]]:
        """(the broker: `OurBrokerCli` or `KafkaProcess`, the clients' settings per listener) for this target."""
        key = (self.id, target.name)
        if key not in ctx.state:
            import trustme

            work = Path(tempfile.mkdtemp(prefix="bench-tls-", dir=ctx.work_dir))
            ca = trustme.CA()
            ca.cert_pem.write_to_path(str(work / "ca.pem"))
            _write_key_store(ca.issue_cert("127.0.0.1", "localhost"), work / "server.pem")
            ports = {name: free_port() for name in LISTENERS}
            jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
                    f'username="{USER}" password="{PASSWORD}" user_{USER}="{PASSWORD}";')
            # The same keys on both sides: Kafka reads a PEM key store and trust store from files as ours does.
            security = {
                "ssl.keystore.type": "PEM", "ssl.keystore.location": str(work / "server.pem"),
                "ssl.truststore.type": "PEM", "ssl.truststore.location": str(work / "ca.pem"),
                "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_ssl.plain.sasl.jaas.config": jaas,
            }
            listeners = ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items())
            broker: Any
            if isinstance(target, KafkaTarget):
                broker = KafkaProcess(target.version, work, security)
                props = broker.node.properties
                props["listeners"] = f"{listeners},CONTROLLER://127.0.0.1:{broker.controller_port}"
                props["advertised.listeners"] = listeners
                props["listener.security.protocol.map"] += ",SSL:SSL,SASL_SSL:SASL_SSL"
                broker.start(ctx.timeout(120))  # stops the node itself when it fails
                try:
                    warm_up_kafka(AttachedTarget(target.name, "kafka", broker.bootstrap, broker.pid),
                                  kafka_warmup_messages(ctx))
                except Exception:
                    broker.stop()
                    raise
            else:
                broker = OurBrokerCli(work / "logs", {"listeners": listeners, **security}, port=ports["PLAINTEXT"])
                broker.start(ctx.timeout(30))
            tls = {"ssl.ca.location": str(work / "ca.pem")}
            clients = {
                "PLAINTEXT": {"bootstrap": f"127.0.0.1:{ports['PLAINTEXT']}", "conf": {}},
                "SSL": {"bootstrap": f"127.0.0.1:{ports['SSL']}", "conf": {"security.protocol": "SSL", **tls}},
                "SASL_SSL": {"bootstrap": f"127.0.0.1:{ports['SASL_SSL']}", "conf": {
                    "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": USER,
                    "sasl.password": PASSWORD, **tls}},
            }
            ctx.state[key] = (broker, clients)
        return ctx.state[key]

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        broker, clients = self._broker(target, ctx)
        attached = AttachedTarget(target.name, target.kind, clients["PLAINTEXT"]["bootstrap"], broker.pid)
        order = LISTENERS[rep % 3:] + LISTENERS[:rep % 3]
        per_load = ctx.timeout(240) / (2 * len(LISTENERS))
        values: Values = {}
        topics: set[str] = set()
        try:
            for listener in order:
                tps = ensure_partitions(attached, f"bench-tls-{uuid.uuid4().hex[:8]}", 1, ctx.timeout(60))
                topics.add(tps[0][0])
                client = clients[listener]
                produced = run_load({"kind": "produce", "bootstrap": client["bootstrap"], "tps": tps,
                                     "count": self.count, "size": KIB, "acks": "1", "linger_ms": 5,
                                     "batch_bytes": MIB, "client_conf": client["conf"]}, max(5.0, per_load))
                consumed = run_load({"kind": "consume", "bootstrap": client["bootstrap"], "tps": tps,
                                     "expected": self.count, "client_conf": client["conf"]}, max(5.0, per_load))
                if consumed["messages"] != self.count:
                    raise LoadError(f"{listener}: read back {consumed['messages']} of {self.count} messages")
                values[_name("produce", listener)] = produced["MB/s"]
                values[_name("consume", listener)] = consumed["MB/s"]
        finally:
            delete_topics(attached, topics)
        for direction in ("produce", "consume"):
            base = values[_name(direction, "PLAINTEXT")]
            for listener in LISTENERS[1:]:
                if base > 0:
                    values[f"{direction} {listener} / PLAINTEXT"] = values[_name(direction, listener)] / base
        notes = [f"{self.count:,} msgs of 1 KiB per listener; SASL_SSL with PLAIN; one broker, three listeners"]
        if target.kind == "ours":
            notes.append("fetch over TLS is pread + SSL send (no kTLS sendfile in Python's ssl)")
        return values, notes

    def cleanup(self, target: Target, ctx: Context) -> None:
        entry = ctx.state.pop((self.id, target.name), None)
        if entry is not None:
            entry[0].stop()
