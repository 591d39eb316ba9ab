"""Kafka Streams (from Maven Central, `realkafka.STREAMS_KAFKA`) against our broker: a word count with
processing.guarantee=exactly_once_v2 (tests/interop/java/WordCount.java) is killed with kill -9 while its input
is still arriving, started again on the same state directory, and its committed output ends with every word's
exact count: nothing counted twice, nothing lost, and no count ever going back.

What it relies on in the broker: transactions (EOS v2: one producer per thread, its output, changelog and group
offsets in one transaction, KIP-447 fencing by the group's generation), read_committed fetches for the changelog
restore and the output, the classic group with Streams' own assignor, internal topics created with configs
(a compacted changelog, a repartition topic purged with DeleteRecords).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from realkafka import STREAMS_KAFKA, jars
from realkafka.javac import compile_sources
from tests.interop.support import Nodes

SOURCE = Path(__file__).with_name("java") / "WordCount.java"
VOCABULARY = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
              "lima", "mike")
LINES = 3000


def line(i: int) -> str:
    return " ".join(VOCABULARY[(i * 7 + j * 5 + j * j) % len(VOCABULARY)] for j in range(1 + i % 6))


class Feeder(threading.Thread):
    """A stock producer (librdkafka, acks=all) writing the input lines in small batches at a steady pace. Two thirds
    in it slows to a line every 0.2 s until `killed` is set, so the kills land while input is still arriving."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="feeder", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.topic = topic
        self.sent = 0
        self.killed = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for i in range(LINES):
                self.producer.produce(self.topic, key=str(i).encode(), value=line(i).encode())
                slow = i >= LINES * 2 // 3 and not self.killed.is_set()
                if slow or i % 25 == 24:
                    assert self.producer.flush(30) == 0, "input undelivered"
                    self.sent = i + 1
                    time.sleep(0.2 if slow else 0.05)
            assert self.producer.flush(30) == 0, "input undelivered"
            self.sent = LINES
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e


def open_transaction(admin: AdminClient, tps: list[TopicPartition]) -> bool:
    """Whether a partition holds records of a transaction still open: its last stable offset (read_committed's
    end) below its high watermark (read_uncommitted's)."""
    ends = {}
    for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, isolation_level=level)
        ends[level] = [futures[tp].result(30).offset for tp in tps]
    return any(lso < hw for lso, hw in zip(ends[IsolationLevel.READ_COMMITTED], ends[IsolationLevel.READ_UNCOMMITTED],
                                          strict=True))


class Counts:
    """The output topic read read_committed from the start: each word's counts in order."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                                  "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self.seen: dict[str, list[int]] = {}

    def poll(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for msg in self.consumer.consume(500, 0.2):
                assert msg.error() is None, msg.error()
                self.seen.setdefault(msg.key().decode(), []).append(int.from_bytes(msg.value(), "big", signed=True))

    def latest(self) -> dict[str, int]:
        return {word: counts[-1] for word, counts in self.seen.items()}


def test_a_word_count_with_exactly_once_v2_is_exact_after_a_kill_9(nodes: Nodes, tmp_path: Path) -> None:
    broker = nodes.our_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("words", 3, 1), NewTopic("word-counts", 3, 1)]).values():
        future.result(30)
    classpath = jars.classpath(jars.kafka_streams(STREAMS_KAFKA))
    classes = compile_sources([SOURCE], classpath)
    app = nodes.java_app("wordcount", f"{classes}:{classpath}", "WordCount",
                         [broker.bootstrap, "wordcount", "words", "word-counts", str(tmp_path / "state")])
    app.start().wait_for("STATE RUNNING", 120)

    counts = Counts(broker.bootstrap, "word-counts")
    feeder = Feeder(broker.bootstrap, "words")
    feeder.start()
    # Killed mid-stream: once its first transactions are committed, while the input is still arriving, and inside
    # a transaction (records of it in the repartition topic beyond the last stable offset). The dead producer's
    # transaction stays open until the restarted instance's InitProducerId aborts it; if the transaction ended in
    # the instant before the kill, the instance is started again and killed again.
    deadline = time.monotonic() + 60
    while not counts.seen and time.monotonic() < deadline:
        counts.poll(0.5)
    assert counts.seen, "no committed output within 60 s"
    repartition = [TopicPartition("wordcount-words-repartition", p) for p in range(3)]
    for _attempt in range(3):
        deadline = time.monotonic() + 30
        while not open_transaction(admin, repartition):
            assert time.monotonic() < deadline, "no transaction open in the repartition topic for 30 s"
        app.kill()
        killed_at = feeder.sent
        interrupted = open_transaction(admin, repartition)
        app.start().wait_for("STATE RUNNING", 120)
        if interrupted:
            break
    assert interrupted, "three kills in a row missed an open transaction"
    assert killed_at < LINES, "the input was complete before the kill: nothing left mid-stream"
    feeder.killed.set()

    feeder.join(120)
    assert feeder.error is None, feeder.error
    expected = Counter(word for i in range(LINES) for word in line(i).split())
    deadline = time.monotonic() + 120
    while counts.latest() != expected and time.monotonic() < deadline:
        counts.poll(1.0)
    counts.poll(3.0)  # anything more that comes would be counted twice
    counts.consumer.close()
    assert counts.latest() == dict(expected), (
        f"killed after {killed_at} of {LINES} lines; counts differ: "
        f"{ {w: (counts.latest().get(w), n) for w, n in expected.items() if counts.latest().get(w) != n} }")
    for word, seen in counts.seen.items():
        assert all(a < b for a, b in zip(seen, seen[1:], strict=False)), f"{word}'s count went back: {seen}"
