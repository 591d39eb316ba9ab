"""A local cluster on loopback: a real ZooKeeper and N broker processes sharing it.

    python -m broker.local_cluster --brokers 3 [--data-dir ./cluster-data] [--override key=value ...]

prints the bootstrap servers and runs until SIGINT/SIGTERM, then stops the brokers (SIGTERM: controlled
shutdown) and ZooKeeper. `LocalCluster` is the same thing for tests and tools: `.brokers[i]` are
`broker.testing.BrokerProcess` objects (kill -9 / SIGSTOP / restart them), `.zookeeper` the server.
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

CLUSTER_DEFAULTS = {
    "offsets.topic.replication.factor": "3",
    "default.replication.factor": "1",
    "replica.lag.time.max.ms": "10000",
    "zookeeper.session.timeout.ms": "6000",
    "controlled.shutdown.retry.backoff.ms": "500",
    "replica.fetch.backoff.ms": "200",
}


def _count_starts(log_path: Path) -> int:
    try:
        return log_path.read_text(errors="replace").count(" started in ")
    except OSError:
        return 0


class LocalCluster:
    def __init__(self, n_brokers: int = 3, overrides: dict[str, str] | None = None, *,
                 data_dir: Path | None = None) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="cluster-"))
        self.n_brokers = n_brokers
        self.overrides = dict(CLUSTER_DEFAULTS)
        self.overrides.update(overrides or {})
        self.zookeeper: ZooKeeperServer | None = None
        self.brokers: list[BrokerProcess] = []
        self.ports = [free_port() for _ in range(n_brokers)]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def broker_props(self, i: int) -> dict[str, str]:
        assert self.zookeeper is not None
        props = dict(self.overrides)
        props.update({"broker.id": str(i), "zookeeper.connect": self.zookeeper.connect_string})
        return props

    def start(self) -> LocalCluster:
        self.zookeeper = start_zookeeper(self.data_dir / "zookeeper")
        try:
            for i in range(self.n_brokers):
                self.brokers.append(BrokerProcess(self.broker_props(i), data_dir=self.data_dir / f"broker{i}",
                                                  port=self.ports[i]))
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
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.override)
    cluster = LocalCluster(args.brokers, overrides, data_dir=args.data_dir)
    cluster.start()
    assert cluster.zookeeper is not None
    print(f"ZooKeeper: {cluster.zookeeper.connect_string}")
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
