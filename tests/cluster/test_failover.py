"""Failover without loss: 3 brokers on a real ZooKeeper, a topic with RF=3 and min.insync.replicas=2, an
idempotent acks=all confluent-kafka producer writing ≥ 100,000 messages while the test kill -9s the current
leader of each partition in turn and restarts it (same data directory and port).

Afterwards: every acknowledged message is there exactly once and in order per partition (a fresh consumer
reads them all), the leader epochs rose, the ISR is back to all three brokers (ZooKeeper and Metadata),
and the three replicas' `.log` bytes are identical up to the high watermark.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.cluster.support import (
    Zk,
    consume_all,
    create_topic,
    metadata,
    prefix_up_to,
    segment_bytes,
    start_cluster,
    wait_isr,
    wait_until,
)

TOPIC = "failover"
PARTITIONS = 3
MIN_MESSAGES = 100_000
MAX_MESSAGES = 400_000
RATE = 5000  # messages per second while the leaders are killed
OVERRIDES = {
    "replica.lag.time.max.ms": "3000",
    "zookeeper.session.timeout.ms": "3000",
    "replica.fetch.wait.max.ms": "100",
    "log.segment.bytes": "1048576",  # several segments per replica, rolled at different positions
    # Kafka 3.7's inter-broker protocol: ISR changes go to the controller as AlterPartition and producer id
    # blocks come from it (AllocateProducerIds), across every kill -9 here (of the controller too, when it leads).
    "inter.broker.protocol.version": "3.7",
}


def key(partition: int, seq: int) -> bytes:
    return f"{partition}:{seq:09d}".encode()


def parse_key(k: bytes) -> tuple[int, int]:
    p, s = k.split(b":")
    return int(p), int(s)


def test_kill_each_leader_in_turn_loses_nothing(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS, 3, {"min.insync.replicas": "2"})
        all_brokers = set(range(3))
        wait_isr(zk, TOPIC, PARTITIONS, all_brokers, 20)
        epochs_before = {p: zk.partition_state(TOPIC, p)["leader_epoch"] for p in range(PARTITIONS)}

        acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        failed: list[str] = []
        killer_done = threading.Event()
        killer_errors: list[BaseException] = []
        kills: list[tuple[int, int]] = []

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                failed.append(str(err))
            else:
                p, s = parse_key(msg.key())  # type: ignore[attr-defined]
                acked[p].append(s)

        def kill_and_restart_leader(p: int, wait_for_failover: bool) -> None:
            before = zk.partition_state(TOPIC, p)
            leader = before["leader"]
            # A controller restarted at once may find itself alive again in the next controller's first
            # look, as in Kafka (no broker epochs to compare yet): then it keeps its leaderships, no epoch bump.
            wait_for_failover = wait_for_failover or leader == zk.controller()
            cluster.brokers[leader].kill()
            kills.append((p, leader))
            if wait_for_failover:
                # The controller notices when the ZooKeeper session of the dead broker expires.
                wait_until(lambda: leader not in zk.live_brokers(), 15, f"broker {leader} to leave")
                wait_until(lambda: zk.partition_state(TOPIC, p)["leader"] not in (leader, -1), 15,
                           f"a new leader for partition {p}")
            # Otherwise restarted at once, like a supervisor would: the new process waits out its previous
            # session, so the controller still sees the death (and moves leadership) before the return.
            cluster.restart(leader)
            wait_until(lambda: zk.partition_state(TOPIC, p)["leader_epoch"] > before["leader_epoch"], 10,
                       f"partition {p}'s leader epoch to rise")
            wait_isr(zk, TOPIC, PARTITIONS, all_brokers, 60)

        def killer() -> None:
            try:
                time.sleep(1.0)  # let the producer get going first
                for p in range(PARTITIONS):
                    kill_and_restart_leader(p, wait_for_failover=p != 1)
            except BaseException as e:
                killer_errors.append(e)
            finally:
                killer_done.set()

        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "acks": "all",
                             "linger.ms": 5, "message.timeout.ms": 120000, "queue.buffering.max.messages": 50000,
                             "retry.backoff.ms": 100})
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        sent = 0
        start = time.monotonic()
        deadline = start + 150
        while (sent < MIN_MESSAGES or not killer_done.is_set()) and sent < MAX_MESSAGES \
                and time.monotonic() < deadline:
            # Paced so that production spans every kill: about RATE messages a second until MIN_MESSAGES,
            # then a trickle until the last restarted broker is back in the ISR.
            if sent % 500 == 0:
                producer.poll(0)
                target = sent / RATE if sent < MIN_MESSAGES else (MIN_MESSAGES / RATE) + (sent - MIN_MESSAGES) / 1000
                ahead = target - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
            p = sent % PARTITIONS
            try:
                producer.produce(TOPIC, key=key(p, sent // PARTITIONS), value=b"v" * 20, partition=p,
                                 on_delivery=on_delivery)
            except BufferError:
                producer.poll(0.05)
                continue
            sent += 1
        produced_s = time.monotonic() - start
        remaining = producer.flush(120)
        print(f"produced {sent} messages in {produced_s:.1f}s; kills {kills}; killer done: {killer_done.is_set()}")
        thread.join(120)
        assert not killer_errors, killer_errors
        assert killer_done.is_set()
        assert remaining == 0, f"{remaining} messages still in flight"
        assert not failed, failed[:5]
        assert sent >= MIN_MESSAGES
        assert sum(len(v) for v in acked.values()) == sent
        assert [p for p, _ in kills] == list(range(PARTITIONS))

        # Every acknowledged message exactly once, in order, per partition.
        records = consume_all(cluster.bootstrap, TOPIC, PARTITIONS)
        consumed: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        for partition, _offset, k, _v in records:
            assert k is not None
            p, s = parse_key(k)
            assert p == partition
            consumed[p].append(s)
        for p in range(PARTITIONS):
            assert consumed[p] == list(range(len(consumed[p]))), f"partition {p}: gaps, duplicates or reordering"
            assert sorted(acked[p]) == consumed[p], f"partition {p}: acknowledged set differs from the log"

        # Leader epochs rose, the ISR is all three brokers again (ZooKeeper and Metadata agree).
        for p in range(PARTITIONS):
            st = zk.partition_state(TOPIC, p)
            assert st["leader_epoch"] > epochs_before[p], (p, st, epochs_before)
            assert set(st["isr"]) == all_brokers
        for b in cluster.brokers:  # every broker's metadata cache, not just one
            def isr_of_3(bootstrap: str = b.bootstrap) -> bool:
                md = metadata(bootstrap, TOPIC)
                return len(md) == PARTITIONS and all(set(pm.isrs) == all_brokers for pm in md.values())
            try:
                wait_until(isr_of_3, 10, f"Metadata ISR of 3 from {b.bootstrap}")
            except AssertionError as e:
                seen = {p: (pm.leader, pm.isrs) for p, pm in metadata(b.bootstrap, TOPIC).items()}
                raise AssertionError(f"{b.bootstrap} says {seen}") from e
            for p, pm in metadata(b.bootstrap, TOPIC).items():
                assert set(pm.replicas) == all_brokers and pm.leader in all_brokers, (p, pm)

        # Byte-identical replicas up to the high watermark (stop cleanly so the files are final).
        hws = {p: len(consumed[p]) for p in range(PARTITIONS)}
        cluster.stop()
        for p in range(PARTITIONS):
            logs = [segment_bytes(cluster.data_dir / f"broker{i}" / "logs" / f"{TOPIC}-{p}") for i in range(3)]
            prefixes = [prefix_up_to(data, hws[p]) for data in logs]
            assert len(prefixes[0]) > 0
            assert prefixes[0] == prefixes[1] == prefixes[2], f"partition {p}: replicas differ below the HW"
    finally:
        zk.close()
        cluster.cleanup()
