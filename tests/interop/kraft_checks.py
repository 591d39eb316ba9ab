"""What the interop tests look at, the way a Kafka user looks at a cluster: Kafka's own command-line tools
(`kafka-topics.sh --describe`, `kafka-metadata-quorum.sh describe --replication`), an idempotent acks=all producer
kept writing while brokers die (`Load`), everything read back with a stock consumer, and the replicas' segment
files compared byte for byte.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from realkafka import tools
from tests.cluster.support import consume_all, prefix_up_to, segment_bytes


def create_topic(via: Any, topic: str, partitions: int, replication_factor: int) -> None:
    """CreateTopics sent to the broker `via` (ours sends it on to the controller)."""
    admin = AdminClient({"bootstrap.servers": via.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication_factor)], operation_timeout=30)[topic].result(60)


def describe(version: str, via: Any, topic: str) -> dict[int, dict[str, str]]:
    """`kafka-topics.sh --describe --topic` through `via`, by partition: Leader, Replicas, Isr (and Elr,
    LastKnownElr from Kafka 3.8's tool on)."""
    out = tools.run(version, "kafka-topics", ["--bootstrap-server", via.bootstrap, "--describe", "--topic", topic])
    partitions: dict[int, dict[str, str]] = {}
    for line in out.stdout.splitlines():
        fields = dict(re.findall(r"(\w+):[ ]?([^\t]*)", line))
        if "Partition" in fields and "Leader" in fields:
            partitions[int(fields["Partition"])] = {k: v.strip() for k, v in fields.items()}
    return partitions


def isr(row: dict[str, str]) -> set[int]:
    return {int(b) for b in row["Isr"].split(",") if b}


def leader(row: dict[str, str]) -> int:
    return int(row["Leader"]) if row["Leader"].lstrip("-").isdigit() else -1


def in_every_isr(version: str, via: Any, topic: str, partitions: int, broker_id: int) -> bool:
    rows = describe(version, via, topic)
    return len(rows) == partitions and all(broker_id in isr(row) for row in rows.values())


def quorum_replication(version: str, via: Any) -> dict[int, dict[str, str]]:
    """`kafka-metadata-quorum.sh describe --replication` through `via`, by node id (columns by their header)."""
    lines = tools.run(version, "kafka-metadata-quorum",
                      ["--bootstrap-server", via.bootstrap, "describe", "--replication"]).stdout.splitlines()
    header = lines[0].split()
    return {int(row.split()[0]): dict(zip(header, row.split(), strict=False)) for row in lines[1:] if row.strip()}


@dataclass
class Load:
    """An idempotent acks=all confluent-kafka producer writing numbered values to a topic until stopped, and what
    was acknowledged."""
    bootstrap: str
    topic: str
    acked: set[bytes] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    sent: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Load:
        self._thread = threading.Thread(target=self._run, name=f"load-{self.topic}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5, "message.timeout.ms": 180000})

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                self.acked.add(msg.value())
            else:
                self.errors.append(str(err))

        while not self._stop.is_set():
            for _ in range(20):
                producer.produce(self.topic, value=b"v%08d" % self.sent, on_delivery=delivered)
                self.sent += 1
            producer.poll(0.02)
        producer.flush(180)

    def stop(self) -> Load:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(240)
        return self


def read_back_once(load: Load, read_from: Any, partitions: int) -> None:
    """Every acknowledged record is there, and none twice (the producer is idempotent)."""
    assert load.acked, f"the load acknowledged nothing ({load.errors[:3]})"
    seen: dict[bytes | None, int] = {}
    for _, _, _, value in consume_all(read_from.bootstrap, load.topic, partitions, timeout=120):
        seen[value] = seen.get(value, 0) + 1
    lost = load.acked - set(seen)
    assert not lost, f"{len(lost)} of {len(load.acked)} acknowledged records lost, e.g. {sorted(lost)[:5]}"
    twice = [v for v, n in seen.items() if n > 1]
    assert not twice, f"{len(twice)} records read twice, e.g. {twice[:5]}"


def same_bytes(kafka_log_dir: Path, ours_log_dir: Path, topic: str, partition: int, high_watermark: int) -> int:
    """The replicas of a partition on a Kafka broker and on ours hold the same bytes up to the high watermark;
    returns how many."""
    theirs = prefix_up_to(segment_bytes(kafka_log_dir / f"{topic}-{partition}"), high_watermark)
    mine = prefix_up_to(segment_bytes(ours_log_dir / f"{topic}-{partition}"), high_watermark)
    assert theirs == mine, f"{topic}-{partition}: {len(theirs)} bytes on Kafka, {len(mine)} on ours"
    return len(mine)
