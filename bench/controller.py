"""Topic creation through a KRaft controller (issue 32), a scenario of `bench.scenarios`.

Contract: `ControllerScenario(topics, partitions, reps)` starts, each repetition, a fresh single-node KRaft cluster
of the target's: for ours a combined node (`process.roles=broker,controller`, one voter, formatted with
`python -m broker format`), for a `kafka` target Kafka's own combined node (`KafkaProcess`). It then creates
`topics` topics of `partitions` partitions (replication factor 1) through the node's broker listener with
confluent-kafka's AdminClient, 100 topics per CreateTopics request, the requests one after another, and reports the
seconds until every CreateTopics was answered and until a full Metadata request lists every partition with a
leader. What it measures is the controller's path (validation, placement, records appended and committed in the
metadata log, the broker replaying them and creating its logs), the whole of which a user waits for. The node is
stopped after each repetition; n/a for the mock and for a bootstrap address.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.scenarios import Context, Metric, Scenario, Values
from bench.targets import KafkaProcess, KafkaTarget, OurBrokerCli, Target, TargetError
from bench.wire import free_port
from storage.checkpoints import random_kafka_uuid_str

TOPICS_PER_REQUEST = 100


def _our_combined_node(work: Path, timeout_s: float) -> OurBrokerCli:
    """A formatted, started combined KRaft node of ours: one voter, its broker on a free port."""
    port, controller_port = free_port(), free_port()
    overrides = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}", "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
    }
    node = OurBrokerCli(work / "logs", overrides, port=port)
    cluster_id = random_kafka_uuid_str()
    args = [sys.executable, "-m", "broker", "format", "--cluster-id", cluster_id]
    for key, value in node.overrides.items():
        args += ["--override", f"{key}={value}"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise TargetError(f"python -m broker format failed: {done.stdout}{done.stderr}")
    node.start(timeout_s)
    return node


class ControllerScenario(Scenario):
    fresh_broker = True
    profiled = False

    def __init__(self, topics: int, partitions: int, reps: int) -> None:
        self.topics = topics
        self.partitions = partitions
        self.reps = reps
        self.id = f"controller: {topics:,} topics x {partitions} partitions (KRaft, fresh node)"
        self.metrics = [Metric("create", "s", False), Metric("all leaders in Metadata", "s", False)]

    def not_applicable(self, target: Target) -> str | None:
        if target.kind not in ("ours", "kafka"):
            return "starts a KRaft node of its own: ours or Kafka"
        return None

    def run(self, target: Target, ctx: Context, rep: int) -> tuple[Values, list[str]]:
        from confluent_kafka.admin import AdminClient, NewTopic

        work = Path(tempfile.mkdtemp(prefix="bench-controller-", dir=ctx.work_dir))
        node: OurBrokerCli | KafkaProcess
        if isinstance(target, KafkaTarget):
            node = KafkaProcess(target.version, work)
            node.start(ctx.timeout(120))
        else:
            node = _our_combined_node(work, ctx.timeout(60))
        admin = AdminClient({"bootstrap.servers": node.bootstrap})
        try:
            names = [f"bench-ctl-{rep}-{i:05d}" for i in range(self.topics)]
            deadline = time.monotonic() + ctx.timeout(300)
            start = time.monotonic()
            for i in range(0, len(names), TOPICS_PER_REQUEST):
                futures = admin.create_topics([NewTopic(n, self.partitions, 1)
                                               for n in names[i:i + TOPICS_PER_REQUEST]],
                                              request_timeout=max(1.0, deadline - time.monotonic()))
                for future in futures.values():
                    future.result(timeout=max(1.0, deadline - time.monotonic()))
            created = time.monotonic() - start
            wanted = set(names)
            while True:
                listed = admin.list_topics(timeout=max(1.0, deadline - time.monotonic())).topics
                if all(n in listed and len(listed[n].partitions) == self.partitions
                       and all(p.leader >= 0 for p in listed[n].partitions.values()) for n in wanted):
                    break
                if time.monotonic() > deadline:
                    raise TargetError("not every partition had a leader in Metadata before the deadline")
                time.sleep(0.05)
            leaders = time.monotonic() - start
        finally:
            del admin  # its connections go before the node does (no reconnect noise)
            node.stop()
        kind = "Kafka's combined node" if isinstance(target, KafkaTarget) else "our combined node"
        return {"create": created, "all leaders in Metadata": leaders}, [
            f"{kind}, one voter, fresh each repetition; {TOPICS_PER_REQUEST} topics per CreateTopics, in sequence"]
