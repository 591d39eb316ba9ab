"""kill -9 of a broker process that holds open and aborted transactions, then `python -m broker` on the same data.

The worker (txn_crash_worker.py) writes transactions into a small-segment partition and reports its state;
after SIGKILL (no final snapshot, no flush, no clean-shutdown marker) a broker process restarted on the data
directory recovers it. Over the wire: ListOffsets answers the same last stable offset (read_committed) and
high watermark (read_uncommitted), a confluent-kafka read_committed consumer gets exactly the committed
records below the LSO. After a clean stop the log on disk has the same producer state (epochs, sequences,
coordinator epochs, open transactions), the same aborted-transaction index entries segment by segment and
the same first unstable offset as before the kill.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CKTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition

from broker.testing import free_port
from storage import Log, LogConfig
from tests.storage.txn_support import txn_state

WORKER = Path(__file__).with_name("txn_crash_worker.py")
TOPIC = "txn-crash"
# below the LSO (producer 5's open transaction), in offset order: producer 2's aborted records left out
COMMITTED = [b"c1-1-0", b"c1-1-1", b"c1-1-2", b"plain-4-0", b"plain-4-1", b"plain-4-2", b"plain-4-3", b"c1-1-3",
             b"c1-1-4"]


def start_worker(log_dir: Path, port: int) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, str(WORKER), str(log_dir), str(port), TOPIC],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"worker exited: {proc.stderr.read()[-3000:]}")
        if line.startswith("STATE "):
            state = json.loads(line[len("STATE "):])
        elif line.strip() == "READY":
            assert state is not None
            return proc, state
    proc.kill()
    raise AssertionError("worker did not get ready")


def normalized(state: dict) -> dict:
    """The state as JSON sees it (tuples become lists, int keys strings), for comparing across processes."""
    return json.loads(json.dumps(state))


def committed_values(bootstrap: str, lso: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "after-crash", "isolation.level":
                         "read_committed", "enable.auto.commit": False})
    got: list[bytes] = []
    try:
        tp = CKTopicPartition(TOPIC, 0, 0)
        consumer.assign([tp])
        assert consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1] == lso
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(got) < len(COMMITTED):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        msg = consumer.poll(2)
        assert msg is None or msg.error() is not None, msg.value()  # nothing more below the LSO
    finally:
        consumer.close()
    return got


def test_kill_9_with_open_and_aborted_transactions(broker_factory: Any, tmp_path: Path) -> None:
    data_dir, port = tmp_path / "broker", free_port()
    worker, before = start_worker(data_dir / "logs", port)
    assert before["segments"] > 5 and len(before["ongoing"]) == 2 and len(before["aborted"]) == 2
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    worker.stdout.close()
    worker.stderr.close()

    restarted = broker_factory(process=True, data_dir=data_dir, port=port)
    tp = KPTopicPartition(TOPIC, 0)
    for isolation, expected in (("read_committed", before["lso"]), ("read_uncommitted", before["hw"])):
        consumer = KafkaConsumer(bootstrap_servers=restarted.bootstrap, isolation_level=isolation)
        try:
            assert consumer.end_offsets([tp])[tp] == expected
        finally:
            consumer.close()
    assert committed_values(restarted.bootstrap, before["lso"]) == COMMITTED
    assert restarted.stop() == 0

    log = Log.open(data_dir / "logs" / f"{TOPIC}-0", LogConfig(segment_bytes=300), had_clean_shutdown=True)
    try:
        log.update_high_watermark(before["hw"])
        after = {**txn_state(log), "hw": log.log_end_offset, "segments": len(log.segments)}
        assert normalized(after) == before
    finally:
        log.close()
