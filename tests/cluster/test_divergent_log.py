"""Divergent logs (KIP-101 / KIP-279): a leader that accepted writes nobody else has is killed, a new leader
takes other writes at the same offsets, and the old leader, when it returns, truncates by leader epoch to
the new leader's log — never blindly to its high watermark, never keeping its unreplicated suffix.

The scene: min.insync.replicas=1 and a long replica.lag.time.max.ms, so that while both followers are
SIGSTOPped they are still in the ISR; the leader takes acks=1 writes only it has; it is killed -9 and the
followers continue; the controller elects one of them (a clean election: it is in the ISR), which takes
acks=all writes; the old leader restarts, asks OffsetsForLeaderEpoch, truncates and catches up. Afterwards
every broker holds the same bytes up to the high watermark and no consumer ever sees the lost writes.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.cluster.support import (
    Zk,
    batches,
    consume_all,
    create_topic,
    prefix_up_to,
    segment_bytes,
    start_cluster,
    wait_until,
)

TOPIC = "diverge"
OVERRIDES = {
    "replica.lag.time.max.ms": "30000",  # the frozen followers stay in the ISR
    "zookeeper.session.timeout.ms": "4000",  # the frozen followers stay registered (frozen ~1 s)
    "replica.fetch.wait.max.ms": "100",
}


def produce(port: int, values: list[bytes], acks: str) -> list[int]:
    """Produce to partition 0 through one broker; returns the acknowledged offsets."""
    offsets: list[int] = []
    errors: list[str] = []
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "acks": acks, "linger.ms": 0, "message.timeout.ms": 20000,
            "enable.idempotence": acks == "all"}
    producer = Producer(conf)
    for v in values:
        producer.produce(TOPIC, value=v, partition=0,
                         on_delivery=lambda err, msg: errors.append(str(err)) if err else offsets.append(msg.offset()))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]
    return offsets


def test_old_leader_truncates_its_unreplicated_suffix(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    frozen: list[int] = []
    try:
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        # The doomed leader is not the controller, so the controller sees its death.
        old_leader = next(b for b in range(3) if b != controller)
        followers = [b for b in range(3) if b != old_leader]
        new_leader = followers[0]  # first live ISR member in assignment order
        create_topic(cluster.bootstrap, TOPIC, 1, 3, {"min.insync.replicas": "1"},
                     assignment=[[old_leader, *followers]])
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "full ISR")
        epoch0 = zk.partition_state(TOPIC, 0)["leader_epoch"]

        committed = [b"committed-%d" % i for i in range(300)]
        assert produce(cluster.ports[old_leader], committed, "all") == list(range(300))

        # Only the old leader gets these.
        for b in followers:
            os.kill(cluster.brokers[b].pid, signal.SIGSTOP)
            frozen.append(b)
        # A fetch each follower had parked on the leader would still carry the first new records out; let
        # those expire empty (replica.fetch.wait.max.ms) before writing.
        time.sleep(0.5)
        lost = [b"lost-%d" % i for i in range(200)]
        assert produce(cluster.ports[old_leader], lost, "1") == list(range(300, 500))
        cluster.brokers[old_leader].kill()
        for b in followers:
            os.kill(cluster.brokers[b].pid, signal.SIGCONT)
        frozen.clear()

        wait_until(lambda: zk.partition_state(TOPIC, 0)["leader"] == new_leader, 20, "the clean election")
        state = zk.partition_state(TOPIC, 0)
        assert state["leader_epoch"] > epoch0
        assert sorted(state["isr"]) == sorted(followers)

        # The new leader writes different records at the offsets the lost ones had.
        fresh = [b"fresh-%d" % i for i in range(400)]
        assert produce(cluster.ports[new_leader], fresh, "all") == list(range(300, 700))

        wait_until(lambda: old_leader not in zk.live_brokers(), 15, "the old registration to expire")
        cluster.restart(old_leader)
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 30, "old leader back in ISR")
        log_text = cluster.brokers[old_leader].log_path.read_text(errors="replace")
        assert "truncating from log end offset 500 to 300" in log_text, cluster.brokers[old_leader].log_tail(60)

        more = [b"more-%d" % i for i in range(100)]
        assert produce(cluster.ports[new_leader], more, "all") == list(range(700, 800))
        values = [v for _, _, _, v in consume_all(cluster.bootstrap, TOPIC, 1)]
        assert values == committed + fresh + more

        # Same bytes everywhere up to the HW; the old leader's epoch-0 batches end where the new epoch begins.
        cluster.stop()
        logs = [segment_bytes(cluster.data_dir / f"broker{i}" / "logs" / f"{TOPIC}-0") for i in range(3)]
        prefixes = [prefix_up_to(data, 800) for data in logs]
        assert prefixes[0] == prefixes[1] == prefixes[2]
        epochs = [(base, epoch) for _, _, base, _, epoch in batches(prefixes[0])]
        assert all(epoch == epoch0 for base, epoch in epochs if base < 300)
        assert all(epoch > epoch0 for base, epoch in epochs if base >= 300)
        assert b"lost-" not in logs[old_leader]
    finally:
        for b in frozen:
            os.kill(cluster.brokers[b].pid, signal.SIGCONT)
        zk.close()
        cluster.cleanup()
