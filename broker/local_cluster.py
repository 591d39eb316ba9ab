"""A local cluster on loopback: N combined KRaft nodes of ours (process.roles=broker,controller, all voters: no
ZooKeeper, no Java), as a Kafka 4 cluster is; or with `--zookeeper` a real ZooKeeper and N broker processes sharing
it (ZooKeeper mode, Kafka 3.x's).

    python -m broker.local_cluster --brokers 3 [--zookeeper] [--data-dir ./cluster-data] [--override key=value ...]

prints the bootstrap servers and runs until SIGINT/SIGTERM, then stops the brokers (SIGTERM: controlled
shutdown) and ZooKeeper. `LocalCluster` is the same thing for tests and tools: `.brokers[i]` are
`broker.testing.BrokerProcess` objects (kill -9 / SIGSTOP / restart them), `.zookeeper` the server (None with
`kraft=True`, whose nodes are formatted with a fresh cluster id, node ids 0..N-1, and whose start returns once
every node's broker has started).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from broker.metadata.zookeeper_server import ZooKeeperServer, start_zookeeper
from broker.testing import BrokerProcess, free_port
from storage.checkpoints import random_kafka_uuid_str

CLUSTER_DEFAULTS = {
    "offsets.topic.replication.factor": "3",
    "default.replication.factor": "1",
    "replica.lag.time.max.ms": "10000",
    "zookeeper.session.timeout.ms": "6000",
    "controlled.shutdown.retry.backoff.ms": "500",
    "replica.fetch.backoff.ms": "200",
}


# A combined node's quorum timing: a busy machine must not start elections over a late fetch.
KRAFT_DEFAULTS = {"controller.quorum.fetch.timeout.ms": "4000", "controller.quorum.request.timeout.ms": "4000",
                  "broker.heartbeat.interval.ms": "500"}


def _new_cluster_id() -> str:
    return random_kafka_uuid_str()


def _format(broker: BrokerProcess, cluster_id: str) -> None:
    import os

    from broker.config.kafka_config import KafkaConfig
    from broker.kraft.format import format_dirs

    with open(os.devnull, "w") as out:
        format_dirs(KafkaConfig(broker.props), cluster_id, out=out)


def _wait_for_broker(broker: BrokerProcess, node_id: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while f"broker {node_id} started in" not in broker.log_path.read_text(errors="replace"):
        if broker.proc is not None and broker.proc.poll() is not None:
            raise RuntimeError(f"node {node_id} exited with {broker.proc.returncode}:\n{broker.log_tail()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"node {node_id}'s broker did not start in {timeout}s:\n{broker.log_tail()}")
        time.sleep(0.05)


def _count_starts(log_path: Path) -> int:
    try:
        return log_path.read_text(errors="replace").count(" started in ")
    except OSError:
        return 0


class LocalCluster:
    def __init__(self, n_brokers: int = 3, overrides: dict[str, str] | None = None, *,
                 data_dir: Path | None = None, kraft: bool = False) -> None:
        self.kraft = kraft
        self.controller_ports = [free_port() for _ in range(n_brokers)] if kraft else []
        self.cluster_id = _new_cluster_id() if kraft else ""
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="cluster-"))
        self.n_brokers = n_brokers
        self.overrides = dict(CLUSTER_DEFAULTS)
        self.overrides.update(overrides or {})
        self.kraft_overrides = {k: v for k, v in KRAFT_DEFAULTS.items() if k not in (overrides or {})}
        self.zookeeper: ZooKeeperServer | None = None
        self.brokers: list[BrokerProcess] = []
        self.ports = [free_port() for _ in range(n_brokers)]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def broker_props(self, i: int) -> dict[str, str]:
        if self.kraft:
            voters = ",".join(f"{n}@127.0.0.1:{port}" for n, port in enumerate(self.controller_ports))
            return {**{k: v for k, v in self.overrides.items() if not k.startswith("zookeeper.")},
                    "process.roles": "broker,controller", "node.id": str(i), "controller.quorum.voters": voters,
                    "controller.listener.names": "CONTROLLER",
                    "listeners": f"PLAINTEXT://127.0.0.1:{self.ports[i]},CONTROLLER://127.0.0.1:"
                                 f"{self.controller_ports[i]}",
                    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT", **self.kraft_overrides}
        assert self.zookeeper is not None
        props = dict(self.overrides)
        props.update({"broker.id": str(i), "zookeeper.connect": self.zookeeper.connect_string})
        return props

    def start(self) -> LocalCluster:
        if not self.kraft:
            self.zookeeper = start_zookeeper(self.data_dir / "zookeeper")
        try:
            for i in range(self.n_brokers):
                self.brokers.append(BrokerProcess(self.broker_props(i), data_dir=self.data_dir / f"broker{i}",
                                                  port=self.ports[i]))
                if self.kraft and not (self.data_dir / f"broker{i}" / "logs" / "meta.properties").exists():
                    _format(self.brokers[-1], self.cluster_id)
            # Start them together: each waits only for its own listener.
            errors: list[BaseException] = []

            def start_one(b: BrokerProcess) -> None:
                try:
                    b.start()
                except BaseException as e:
                    errors.append(e)

            threads = [threading.Thread(target=start_one, args=(b,)) for b in self.brokers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
            for i, b in enumerate(self.brokers if self.kraft else []):
                _wait_for_broker(b, i)  # a combined node's process logs its controller's start first
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, i: int, timeout: float = 60.0) -> BrokerProcess:
        """Stop broker i (SIGTERM; a no-op after kill()) and start it again on the same data dir and port.
        Returns once the new process has logged its own start: after a kill -9 that includes waiting out
        the old ZooKeeper session before it can register."""
        b = self.brokers[i]
        b.stop()
        nb = BrokerProcess(self.broker_props(i), data_dir=self.data_dir / f"broker{i}", port=self.ports[i])
        self.brokers[i] = nb
        starts_before = _count_starts(nb.log_path)
        nb.start(timeout)
        # BrokerProcess.start also accepts the previous run's "started in" line in the same log file.
        deadline = time.monotonic() + timeout
        while _count_starts(nb.log_path) <= starts_before:
            if nb.proc is not None and nb.proc.poll() is not None:
                raise RuntimeError(f"broker {i} exited with {nb.proc.returncode}:\n{nb.log_tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {i} did not start in {timeout}s:\n{nb.log_tail()}")
            time.sleep(0.05)
        return nb

    def stop(self) -> None:
        if self.kraft:
            # All at once: a combined node's broker shuts down through the active controller, which needs a
            # majority of the voters still up (stopped one by one, the last would wait out its timeout).
            for b in self.brokers:
                if b.proc is not None and b.proc.poll() is None:
                    b.proc.send_signal(signal.SIGTERM)
        for b in self.brokers:
            try:
                b.stop()
            except Exception:
                b.kill()
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.local_cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--zookeeper", action="store_true",
                      help="ZooKeeper mode: a ZooKeeper server (Debian's, run with Java) and N brokers sharing it")
    mode.add_argument("--kraft", action="store_true", help="N combined KRaft nodes of ours (the default)")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.override)
    cluster = LocalCluster(args.brokers, overrides, data_dir=args.data_dir, kraft=not args.zookeeper)
    cluster.start()
    if cluster.zookeeper is not None:
        print(f"ZooKeeper: {cluster.zookeeper.connect_string}")
    else:
        print(f"KRaft cluster {cluster.cluster_id}: combined nodes 0-{args.brokers - 1}")
    print(f"bootstrap.servers={cluster.bootstrap}")
    print(f"data and logs: {cluster.data_dir} (broker logs in broker*/broker.log); Ctrl-C stops the cluster")
    sys.stdout.flush()
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
