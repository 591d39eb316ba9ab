"""ISR shrink and expansion: a follower SIGSTOPped for longer than `replica.lag.time.max.ms` (but shorter than
its ZooKeeper session, so the controller still sees it alive) leaves the ISR — in ZooKeeper's partition
state and in every live broker's Metadata — while an acks=all producer goes on with two replicas
(min.insync.replicas=2), and the controller keeps working (a new topic meanwhile). After SIGCONT it
catches up and rejoins; nothing acknowledged is lost and the leader never changed (an ISR change by the
leader bumps only the partition epoch, the znode version).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from confluent_kafka import Producer

from tests.cluster.support import Zk, consume_all, create_topic, metadata, start_cluster, wait_until

TOPIC = "isr"
OVERRIDES = {
    "replica.lag.time.max.ms": "1500",
    "zookeeper.session.timeout.ms": "20000",  # the stopped broker stays registered
    "replica.fetch.wait.max.ms": "100",
}


def metadata_isr(bootstrap: str) -> list[int]:
    return sorted(metadata(bootstrap, TOPIC)[0].isrs)


def test_stopped_follower_leaves_and_rejoins_the_isr(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    stopped_pid: int | None = None
    try:
        # In ZooKeeper mode only the controller updates the brokers' metadata caches, so the frozen follower
        # must not be the controller: leader L, followers C (the controller) and F (frozen).
        wait_until(lambda: zk.controller() is not None, 10, "a controller")
        controller = zk.controller()
        leader, frozen = (b for b in range(3) if b != controller)
        create_topic(cluster.bootstrap, TOPIC, 1, 3, {"min.insync.replicas": "2"},
                     assignment=[[leader, controller, frozen]])
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "full ISR")
        before = zk.partition_state(TOPIC, 0)
        assert before["leader"] == leader
        two = sorted([leader, controller])

        acked: list[int] = []
        errors: list[str] = []
        stop = threading.Event()

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                acked.append(int(msg.value()))  # type: ignore[attr-defined]

        def produce() -> None:
            producer = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.ports[leader]}", "acks": "all",
                                 "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 60000})
            i = 0
            while not stop.is_set() and i < 200_000:
                producer.produce(TOPIC, value=str(i).encode(), partition=0, on_delivery=on_delivery)
                i += 1
                if i % 50 == 0:
                    producer.poll(0.01)  # about 5,000 messages a second
            producer.flush(60)

        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        wait_until(lambda: len(acked) > 1000, 20, "acks=all writes with 3 in sync")

        stopped_pid = cluster.brokers[frozen].pid
        os.kill(stopped_pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == two, 10, "ISR shrink in ZooKeeper")
        shrink_s = time.monotonic() - t_stop
        assert shrink_s >= 1.0, f"shrank after {shrink_s:.2f}s, before replica.lag.time.max.ms"
        for i in two:
            wait_until(lambda b=i: metadata_isr(f"127.0.0.1:{cluster.ports[b]}") == two, 10,
                       f"broker {i}'s Metadata to show ISR {two}")
        assert frozen in zk.live_brokers()  # frozen, not dead: it is the lag rule that shrank the ISR

        # acks=all goes on with two in-sync replicas.
        acked_at_shrink = len(acked)
        wait_until(lambda: len(acked) > acked_at_shrink + 2000, 20, "acks=all progress with ISR of 2")
        assert not errors, errors[:5]

        # The controller is not stuck on the frozen broker (its requests to it wait in their own queue):
        # a new topic on the other two is created and served meanwhile.
        t0 = time.monotonic()
        create_topic(cluster.bootstrap, "isr-side", 1, 2, assignment=[two])
        side = Producer({"bootstrap.servers": f"127.0.0.1:{cluster.ports[leader]}", "acks": "all"})
        side.produce("isr-side", b"x", partition=0)
        assert side.flush(10) == 0
        assert time.monotonic() - t0 < 10

        os.kill(stopped_pid, signal.SIGCONT)
        stopped_pid = None
        wait_until(lambda: sorted(zk.partition_state(TOPIC, 0)["isr"]) == [0, 1, 2], 20, "frozen broker back in ISR")
        for i in range(3):
            wait_until(lambda b=i: metadata_isr(f"127.0.0.1:{cluster.ports[b]}") == [0, 1, 2], 10,
                       f"broker {i}'s Metadata to show ISR [0, 1, 2]")
        stop.set()
        thread.join(90)
        assert not thread.is_alive()
        assert not errors, errors[:5]

        after = zk.partition_state(TOPIC, 0)
        assert after["leader"] == leader and after["leader_epoch"] == before["leader_epoch"]
        values = [int(v) for _, _, _, v in consume_all(cluster.bootstrap, TOPIC, 1)]  # type: ignore[arg-type]
        assert values == list(range(len(values)))
        assert sorted(acked) == values

        # The rejoined follower holds the whole log: stop the other two and read from it alone. With
        # unclean election off it can lead only because it is in the ISR.
        cluster.brokers[leader].stop()
        cluster.brokers[controller].stop()
        wait_until(lambda: zk.partition_state(TOPIC, 0)["leader"] == frozen, 20, "the rejoined broker to lead")
        tail = [int(v) for _, _, _, v in consume_all(f"127.0.0.1:{cluster.ports[frozen]}", TOPIC, 1)]  # type: ignore[arg-type]
        assert tail == values
    finally:
        if stopped_pid is not None:
            os.kill(stopped_pid, signal.SIGCONT)
        zk.close()
        cluster.cleanup()
