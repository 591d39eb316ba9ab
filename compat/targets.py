"""Brokers the harness runs against.

- ExternalTarget: any running broker or cluster (ours, Apache Kafka, ...) given by bootstrap.
- EmbeddedTarget: our broker, started by the harness as a ``python -m broker`` subprocess
  (broker.testing.start_broker_process) and stopped when the run ends.
- ClusterTarget: N of our brokers on a ZooKeeper the harness starts; can move a partition's
  leadership (stop its leader, wait for a new one, restart the old) for the not_leader scenario.
- SecuredTarget: our broker with clients on SASL_SSL (SCRAM-SHA-512) and ACLs on; adapters get its settings
  (`security`) in their own vocabulary.
- MockTarget: librdkafka's built-in mock cluster (development aid only; not Kafka-complete).

Every target is a context manager; ``cluster_size`` is the number of brokers it should report.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from storage.values import TopicPartition

# Broker settings the harness starts our broker with: Kafka's defaults except where a default
# would only make the run slow (the 3 s initial rebalance delay, KIP-848's 5 s heartbeats).
HARNESS_OVERRIDES: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500",
    "offsets.topic.replication.factor": "1",
    "auto.create.topics.enable": "true",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ExternalTarget:
    def __init__(self, bootstrap: str, name: str = "external", cluster_size: int | None = None) -> None:
        self.name = name
        self.bootstrap = bootstrap
        self.cluster_size = cluster_size or self._discover_size()

    def _discover_size(self) -> int:
        from compat.runner import default_setup_adapter
        adapter = default_setup_adapter()(self.bootstrap, 10.0)
        try:
            return len(adapter.cluster(None).brokers)
        finally:
            adapter.close()

    def __enter__(self) -> ExternalTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class EmbeddedTarget:
    """One broker of ours in a subprocess, data in a temporary directory."""

    def __init__(self, overrides: dict[str, str] | None = None, name: str = "ours") -> None:
        self.name = name
        self.cluster_size = 1
        self._overrides = {**HARNESS_OVERRIDES, **(overrides or {})}
        self._dir = Path(tempfile.mkdtemp(prefix="compat-broker-"))
        self._proc: Any = None
        self.bootstrap = ""

    def __enter__(self) -> EmbeddedTarget:
        from broker.testing import start_broker_process
        self._proc = start_broker_process(self._overrides, data_dir=self._dir)
        self.bootstrap = self._proc.bootstrap
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


class SecuredTarget:
    """One broker of ours whose clients come in over SASL_SSL with SCRAM-SHA-512 and an authorizer on: TLS with
    certificates made for the run (trustme; nothing checked in), the client user created through
    AlterUserScramCredentials and granted ALL on every topic, group and transactional id and on the cluster
    through CreateAcls — so every request of every scenario passes TLS, SASL and an ACL check. A PLAINTEXT
    listener, for the harness only, acts as the super user that sets this up. `denied` is a second user with
    credentials and no ACL."""

    USER, PASSWORD = "compat", "compat-secret"
    DENIED_USER, DENIED_PASSWORD = "stranger", "stranger-secret"

    def __init__(self, overrides: dict[str, str] | None = None, name: str = "ours-sasl-ssl") -> None:
        self.name = name
        self.cluster_size = 1
        self._dir = Path(tempfile.mkdtemp(prefix="compat-secured-"))
        self._overrides = {**HARNESS_OVERRIDES, **(overrides or {})}
        self._proc: Any = None
        self.bootstrap = ""
        self.plaintext = ""
        self.security: Any = None
        self.denied: Any = None

    def __enter__(self) -> SecuredTarget:
        import trustme

        from broker.testing import start_broker_process
        from compat.model import ClientSecurity

        ca = trustme.CA()
        ca.cert_pem.write_to_path(str(self._dir / "ca.pem"))
        ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
            str(self._dir / "server.pem"))
        plain, secured = free_port(), free_port()
        self._proc = start_broker_process({
            **self._overrides,
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_SSL://127.0.0.1:{secured}",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": str(self._dir / "server.pem"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self._dir / "ca.pem"),
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS",
        }, data_dir=self._dir / "data", port=plain)
        self.plaintext = f"127.0.0.1:{plain}"
        self.bootstrap = f"127.0.0.1:{secured}"
        ca_file = str(self._dir / "ca.pem")
        self.security = ClientSecurity("SASL_SSL", ca_file, "SCRAM-SHA-512", self.USER, self.PASSWORD)
        self.denied = ClientSecurity("SASL_SSL", ca_file, "SCRAM-SHA-512", self.DENIED_USER, self.DENIED_PASSWORD)
        self._grant()
        return self

    def _grant(self) -> None:
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        admin = AdminClient({"bootstrap.servers": self.plaintext})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        for future in admin.alter_user_scram_credentials([
                UserScramCredentialUpsertion(self.USER, info, self.PASSWORD.encode()),
                UserScramCredentialUpsertion(self.DENIED_USER, info, self.DENIED_PASSWORD.encode())]).values():
            future.result(30)
        grants = [AclBinding(kind, name, ResourcePatternType.LITERAL, f"User:{self.USER}", "*", AclOperation.ALL,
                             AclPermissionType.ALLOW)
                  for kind, name in ((ResourceType.TOPIC, "*"), (ResourceType.GROUP, "*"),
                                     (ResourceType.TRANSACTIONAL_ID, "*"), (ResourceType.BROKER, "kafka-cluster"))]
        for future in admin.create_acls(grants).values():
            future.result(30)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.stop()
        shutil.rmtree(self._dir, ignore_errors=True)


class ZooKeeperServer:
    """A standalone ZooKeeper from the Debian jars on a free loopback port."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self._root = root
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        data = self._root / "zk"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self._root / "zoo.cfg"
        cfg.write_text(f"dataDir={data}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\n"
                       "admin.enableServer=false\ntickTime=500\ninitLimit=10\nsyncLimit=5\n")
        classpath = "/usr/share/java/*:/usr/share/zookeeper/*"
        self._proc = subprocess.Popen(
            ["java", "-Xmx128m", "-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(cfg)],
            stdout=(self._root / "zk.log").open("wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"srvr")
                    if s.recv(100):
                        return f"127.0.0.1:{self.port}"
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"ZooKeeper did not start on port {self.port}; see {self._root / 'zk.log'}")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


class ClusterTarget:
    """N brokers of ours sharing a ZooKeeper; each keeps its port across restarts."""

    def __init__(self, size: int, overrides: dict[str, str] | None = None, name: str = "ours-cluster") -> None:
        self.name = name
        self.cluster_size = size
        self._root = Path(tempfile.mkdtemp(prefix="compat-cluster-"))
        self._zk = ZooKeeperServer(self._root)
        self._overrides = {**HARNESS_OVERRIDES, **(overrides or {}),
                           "offsets.topic.replication.factor": str(min(3, size))}
        self._ports = {node: free_port() for node in range(size)}
        self._procs: dict[int, Any] = {}
        self.bootstrap = ""

    def _start(self, node: int, zk: str) -> None:
        from broker.testing import start_broker_process
        port = self._ports[node]
        overrides = {**self._overrides, "broker.id": str(node), "zookeeper.connect": zk,
                     "listeners": f"PLAINTEXT://127.0.0.1:{port}"}
        self._procs[node] = start_broker_process(overrides, data_dir=self._root / f"broker-{node}", port=port)

    def __enter__(self) -> ClusterTarget:
        self._zk_connect = self._zk.start()
        for node in self._ports:
            self._start(node, self._zk_connect)
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in self._ports.values())
        return self

    def assert_alive(self) -> None:
        """Every broker still running, or an AssertionError carrying the dead one's log tail (the logs go with
        the cluster's directory at exit, so this is where a broker that died between scenarios is explained)."""
        dead = {node: proc for node, proc in self._procs.items()
                if proc.proc is not None and proc.proc.poll() is not None}
        assert not dead, "\n".join(f"broker {node} exited with {proc.proc.returncode}:\n{proc.log_tail(60)}"
                                    for node, proc in dead.items())

    def __exit__(self, *exc: object) -> None:
        for proc in self._procs.values():
            proc.stop()
        self._zk.stop()
        shutil.rmtree(self._root, ignore_errors=True)

    def move_leader(self, tp: TopicPartition, timeout_s: float = 30.0) -> None:
        """Stop tp's leader, wait until metadata names another leader, restart the old one (whatever happens:
        the later scenarios need all brokers)."""
        from compat.runner import default_setup_adapter
        adapter = default_setup_adapter()(self.bootstrap, 10.0)
        old: int | None = None
        try:
            old = adapter.cluster([tp.topic]).topics[tp.topic][tp.partition]
            self._procs[old].stop()
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    leader = adapter.cluster([tp.topic]).topics.get(tp.topic, {}).get(tp.partition, -1)
                except Exception:  # noqa: BLE001 - the client may still try the stopped broker: ask again
                    leader = -1
                if leader not in (-1, old):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no new leader for {tp} within {timeout_s}s after stopping broker {old}")
                time.sleep(0.2)
        finally:
            adapter.close()
            if old is not None:
                self._start(old, self._zk_connect)


class MockTarget:
    """librdkafka's mock cluster, hosted by a confluent_kafka Producer in this process."""

    def __init__(self, brokers: int = 1, name: str = "librdkafka-mock") -> None:
        self.name = name
        self.cluster_size = brokers
        self._host: Any = None
        self.bootstrap = ""

    def __enter__(self) -> MockTarget:
        from confluent_kafka import Producer
        self._host = Producer({"test.mock.num.brokers": self.cluster_size, "log_level": 3})
        md = self._host.list_topics(timeout=10)
        self.bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
        return self

    def __exit__(self, *exc: object) -> None:
        self._host = None

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None) -> None:
        """The mock has no CreateTopics; a producer's metadata request auto-creates the topic
        (with the mock's default partition count, not ``partitions``)."""
        self._host.list_topics(topic=name, timeout=10)


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers, else why not."""
    if shutil.which("docker") is None:
        return "no Docker engine (docker CLI not installed)"
    try:
        r = subprocess.run(["docker", "info"], capture_output=True, timeout=15, env={**os.environ})
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"no Docker engine ({e})"
    return None if r.returncode == 0 else "no Docker engine (docker info failed)"
