"""A group member that dies without leaving (kcat's balanced consumer, `kill -9`) is expired after its
session timeout, and its partitions go to the surviving member (a confluent-kafka Consumer).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="the kcat binary is not installed")

TOPIC = "session-e2e"
GROUP = "session-e2e"


def members(admin: AdminClient) -> list[Any]:
    [desc] = [f.result(10) for f in admin.describe_consumer_groups([GROUP], request_timeout=10).values()]
    return list(desc.members)


def test_dead_member_is_expired_and_its_partitions_reassigned(broker: Any) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 4, 1)], operation_timeout=10).values():
        f.result(15)
    kcat = subprocess.Popen(
        ["kcat", "-b", broker.bootstrap, "-G", GROUP, "-q", "-X", "session.timeout.ms=6000",
         "-X", "heartbeat.interval.ms=500", "-X", "partition.assignment.strategy=range", TOPIC],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                         "partition.assignment.strategy": "range"})
    try:
        consumer.subscribe([TOPIC])

        def assigned() -> set[int]:
            consumer.poll(0.2)
            return {tp.partition for tp in consumer.assignment()}

        deadline = time.monotonic() + 30
        while not (len(assigned()) == 2 and len(members(admin)) == 2) and time.monotonic() < deadline:
            pass
        assert len(assigned()) == 2, "the two members should split four partitions"
        assert sorted(m.client_id for m in members(admin)) == ["rdkafka", "rdkafka"]

        kcat.send_signal(signal.SIGKILL)
        kcat.wait(5)
        killed_at = time.monotonic()
        deadline = killed_at + 30
        while assigned() != {0, 1, 2, 3} and time.monotonic() < deadline:
            pass
        assert assigned() == {0, 1, 2, 3}, "the survivor should own every partition after the session timeout"
        # Not before the session timeout: a dead member is noticed by missing heartbeats, nothing sooner.
        assert time.monotonic() - killed_at >= 5.0
        assert len(members(admin)) == 1
    finally:
        if kcat.poll() is None:
            kcat.kill()
            kcat.wait(5)
        consumer.close()
