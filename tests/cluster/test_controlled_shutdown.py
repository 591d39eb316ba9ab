"""Controlled shutdown: SIGTERM a broker that leads partitions while an idempotent acks=all producer writes.
The broker asks the controller (ControlledShutdown) to move its leadership away before it exits: by the
time the process is gone ZooKeeper shows other leaders and ISRs without it, its log says the controlled
shutdown completed, the controller's log says it moved the partitions, and the producer saw no error
beyond its own retries. Restarted, the broker rejoins every ISR (it is no longer "shutting down" for the
controller), the periodic preferred-leader check gives it back the partitions it is the preferred
leader of, and nothing acknowledged was lost.
"""

from __future__ import annotations

import threading
from pathlib import Path

from confluent_kafka import Producer

from tests.cluster.support import Zk, consume_all, create_topic, start_cluster, wait_isr, wait_until

TOPIC = "graceful"
PARTITIONS = 3
OVERRIDES = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.fetch.wait.max.ms": "100",
    "controlled.shutdown.retry.backoff.ms": "200",
    "replica.lag.time.max.ms": "10000",
    "leader.imbalance.check.interval.seconds": "1",  # auto leader rebalance, quickly
}


def test_sigterm_moves_leadership_first(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        wait_isr(zk, TOPIC, PARTITIONS, {0, 1, 2}, 20)
        leaders = {p: zk.partition_state(TOPIC, p)["leader"] for p in range(PARTITIONS)}
        victim = leaders[0]
        led = [p for p, b in leaders.items() if b == victim]

        acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        errors: list[str] = []
        stop = threading.Event()

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                acked[msg.partition()].append(int(msg.value()))  # type: ignore[attr-defined]

        def produce() -> None:
            producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                                 "linger.ms": 5, "message.timeout.ms": 60000})
            i = 0
            while not stop.is_set() and i < 300_000:
                producer.produce(TOPIC, value=str(i).encode(), partition=i % PARTITIONS, on_delivery=on_delivery)
                i += 1
                if i % 60 == 0:
                    producer.poll(0.01)
            producer.flush(60)

        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        wait_until(lambda: all(len(v) > 300 for v in acked.values()), 20, "writes to every partition")

        rc = cluster.brokers[victim].stop()
        assert rc == 0, f"exit code {rc}; broker {victim}'s log ends:\n{cluster.brokers[victim].log_tail(60)}"
        # Right at exit: the partitions it led have other leaders, and it is in no ISR.
        for p in range(PARTITIONS):
            st = zk.partition_state(TOPIC, p)
            assert st["leader"] != victim and victim not in st["isr"], (p, st)
        text = cluster.brokers[victim].log_path.read_text(errors="replace")
        assert "controlled shutdown complete: leadership moved away" in text
        assert "shut down cleanly" in text
        controller_logs = "".join(b.log_path.read_text(errors="replace") for b in cluster.brokers)
        assert f"controlled shutdown of broker {victim} moved" in controller_logs

        # Promptly: the leaders must not wait for the stopped replica (out of the ISR) as if it were caught up
        # for replica.lag.time.max.ms (10 s here), which would stall acks=all and, behind it, Metadata.
        counts = {p: len(v) for p, v in acked.items()}
        wait_until(lambda: all(len(acked[p]) > counts[p] + 300 for p in range(PARTITIONS)), 4,
                   "acks=all writes going on without the broker")
        assert not errors, errors[:5]

        cluster.restart(victim)
        wait_isr(zk, TOPIC, PARTITIONS, {0, 1, 2}, 30)
        # Preferred leader election (auto.leader.rebalance.enable): the first replica of each assignment,
        # which led at the start, leads again once it is back in the ISR.
        wait_until(lambda: all(zk.partition_state(TOPIC, p)["leader"] == leaders[p] for p in range(PARTITIONS)),
                   15, f"preferred leaders {leaders} again")
        counts = {p: len(v) for p, v in acked.items()}
        wait_until(lambda: all(len(acked[p]) > counts[p] + 300 for p in range(PARTITIONS)), 10,
                   "acks=all writes going on after the leaders moved back")
        stop.set()
        thread.join(90)
        assert not thread.is_alive()
        assert not errors, errors[:5]

        consumed: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        for p, _, _, v in consume_all(cluster.bootstrap, TOPIC, PARTITIONS):
            consumed[p].append(int(v))  # type: ignore[arg-type]
        for p in range(PARTITIONS):
            assert consumed[p] == sorted(acked[p]), f"partition {p}"
            assert consumed[p] == list(range(p, p + PARTITIONS * len(consumed[p]), PARTITIONS))
        assert led
    finally:
        zk.close()
        cluster.cleanup()
