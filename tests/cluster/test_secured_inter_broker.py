"""A 3-broker cluster whose brokers talk to each other over SASL_SSL (PLAIN inside TLS): replica fetchers,
the controller channel and controller requests all go through the inter-broker listener, while clients use
both listeners. Each broker registers both endpoints in ZooKeeper with Kafka's listener_security_protocol_map,
Metadata on each listener answers with that listener's endpoints, follower replicas join the ISR (they can
only fetch through the secured listener), and after kill -9 of a partition leader no acknowledged write is
lost."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from broker.local_cluster import LocalCluster
from broker.testing import free_port
from tests.cluster.support import Zk, create_topic, metadata, wait_isr, wait_until
from tests.security.support import Pki, plain_jaas

USERS = {"broker": "broker-secret", "app": "app-secret"}


class SecuredCluster(LocalCluster):
    def __init__(self, pki: Pki, data_dir: Path) -> None:
        super().__init__(3, {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(USERS, "broker"),
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
            "replica.lag.time.max.ms": "3000", "offsets.topic.replication.factor": "3",
        }, data_dir=data_dir)
        self.secured_ports = [free_port() for _ in range(3)]

    def broker_props(self, i: int) -> dict[str, str]:
        props = super().broker_props(i)
        props["listeners"] = f"PLAINTEXT://127.0.0.1:{self.ports[i]},SASL_SSL://127.0.0.1:{self.secured_ports[i]}"
        return props

    def secured_conf(self, pki: Pki) -> dict[str, Any]:
        return {"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in self.secured_ports),
                "security.protocol": "SASL_SSL", "ssl.ca.location": str(pki.ca), "sasl.mechanism": "PLAIN",
                "sasl.username": "app", "sasl.password": USERS["app"]}


def test_sasl_ssl_between_brokers(tmp_path: Path) -> None:
    pki = Pki.make(tmp_path)
    cluster = SecuredCluster(pki, tmp_path / "cluster").start()
    zk = Zk(cluster)
    try:
        for i in range(3):
            registration = json.loads(zk.client.get(f"/brokers/ids/{i}")[0])
            assert registration["endpoints"] == [f"PLAINTEXT://127.0.0.1:{cluster.ports[i]}",
                                                 f"SASL_SSL://127.0.0.1:{cluster.secured_ports[i]}"]
            assert registration["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT",
                                                                      "SASL_SSL": "SASL_SSL"}
            assert (registration["host"], registration["port"]) == ("127.0.0.1", cluster.ports[i])

        create_topic(cluster.bootstrap, "secured", 1, 3, {"min.insync.replicas": "2"})
        wait_isr(zk, "secured", 1, {0, 1, 2}, 60)  # the followers fetch over SASL_SSL

        conf = cluster.secured_conf(pki)
        from confluent_kafka.admin import AdminClient
        md = AdminClient(conf).list_topics(timeout=10)
        assert sorted(b.port for b in md.brokers.values()) == sorted(cluster.secured_ports)
        assert sorted(b.port for b in AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(
            timeout=10).brokers.values()) == sorted(cluster.ports)

        acked: list[bytes] = []

        def produce(prefix: str, n: int) -> None:
            producer = Producer({**conf, "acks": "all", "enable.idempotence": True})
            for i in range(n):
                value = f"{prefix}-{i}".encode()
                producer.produce("secured", value, on_delivery=lambda err, msg: err is None and acked.append(
                    msg.value()))
            producer.flush(60)

        produce("before", 200)
        assert len(acked) == 200
        leader = metadata(cluster.bootstrap, "secured")[0].leader
        cluster.brokers[leader].kill()
        survivors = ",".join(f"127.0.0.1:{p}" for i, p in enumerate(cluster.ports) if i != leader)
        wait_until(lambda: metadata(survivors, "secured")[0].leader not in (leader, -1), 60, "a new leader")
        produce("after", 200)
        assert len(acked) == 400

        consumer = Consumer({**conf, "group.id": "check", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.assign([TopicPartition("secured", 0, 0)])
        got: set[bytes] = set()
        deadline = time.monotonic() + 60
        while not set(acked) <= got and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.add(m.value())
        consumer.close()
        assert set(acked) <= got
    finally:
        zk.close()
        cluster.stop()
        cluster.cleanup()
