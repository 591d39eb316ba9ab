"""Kafka 4.4's `kafka-dump-log --cluster-metadata-decoder` reads the log our Raft voters wrote: the leader's
LeaderChangeMessage and the metadata records a controller will append (real Kafka from Maven Central, `realkafka`)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from protocol.metadata_records import TopicRecord, encode_metadata_record
from tests.broker.raft.sim import Sim

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="Kafka's tools need a JDK (java)")


def test_kafka_dump_log_decodes_our_raft_log(tmp_path: Path) -> None:
    from realkafka import tools

    sim = Sim(tmp_path, 3, seed=4)
    sim.run_until(lambda: sim.leader() is not None)
    leader = sim.leader()
    assert leader is not None
    topic_id = uuid.uuid4()
    record = encode_metadata_record(TopicRecord(name="raft-topic", topic_id=topic_id))
    last = leader.append([record], sim.now)
    sim.run_until(lambda: all(c.high_watermark > last for c in sim.clients()))
    follower = next(n for n in sim.nodes.values() if n.client is not leader)
    for node in sim.nodes.values():
        node.stop()
    segment = sorted(follower.dir.glob("*.log"))[0]
    dumped = tools.run("4.4.0", "kafka-dump-log", ["--cluster-metadata-decoder", "--files", str(segment)]).stdout
    assert "LeaderChange" in dumped, dumped[:3000]
    assert "TOPIC_RECORD" in dumped and "raft-topic" in dumped, dumped[:3000]
    assert f"leaderId\":{leader.node_id}" in dumped.replace(" ", ""), dumped[:3000]
    assert "isvalid: true" in dumped.lower(), dumped[:3000]
