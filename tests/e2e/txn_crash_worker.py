"""Subprocess for the kill -9 transaction test (not a test module): a broker holding transactions, then idle.

``python txn_crash_worker.py <log dir> <port> <topic>`` runs a broker in this process (log.dirs = <log dir>,
listening on <port>), creates <topic> (one partition, small segments) with a stock admin client, writes
transactions through the ReplicaManager as clients and the coordinator would (an aborted one spanning
segments, committed ones, two left open, plain idempotent records around them), then prints one line
``STATE <json>`` (the partition's transaction state: `tests.storage.txn_support.txn_state` plus the high
watermark) and ``READY``, and waits to be killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafka import KafkaAdminClient  # noqa: E402
from kafka.admin import NewTopic  # noqa: E402

from broker.testing import EmbeddedBroker  # noqa: E402
from storage import AppendOrigin, TopicPartition  # noqa: E402
from tests.e2e.txn_support import append  # noqa: E402
from tests.storage.txn_support import idempotent_batch, marker, txn_batch, txn_state  # noqa: E402

COORDINATOR = AppendOrigin.COORDINATOR


def write(broker: EmbeddedBroker, tp: TopicPartition) -> None:
    append(broker, tp, txn_batch(1, 0, 3, tag="c1"))  # producer 1 commits
    append(broker, tp, txn_batch(2, 0, 2, tag="a2"))  # producer 2 aborts, over several segments
    append(broker, tp, idempotent_batch(4, 0, tag="plain"))
    append(broker, tp, marker(1, commit=True, coordinator_epoch=3), origin=COORDINATOR)
    for seq in range(2, 8, 2):
        append(broker, tp, txn_batch(2, seq, 2, tag="a2"))
        append(broker, tp, idempotent_batch(4, seq // 2, tag="plain"))
    append(broker, tp, marker(2, commit=False, coordinator_epoch=3), origin=COORDINATOR)
    append(broker, tp, txn_batch(1, 3, 2, tag="c1"))  # producer 1 again: committed
    append(broker, tp, txn_batch(5, 0, 2, tag="open5"))  # producer 5: left open (the LSO)
    append(broker, tp, marker(1, commit=True, coordinator_epoch=3), origin=COORDINATOR)
    append(broker, tp, txn_batch(2, 8, tag="a2"))  # producer 2 aborts a second time
    append(broker, tp, marker(2, commit=False, coordinator_epoch=4), origin=COORDINATOR)
    append(broker, tp, txn_batch(3, 0, tag="open3"))  # producer 3: left open too
    append(broker, tp, idempotent_batch(4, 4, tag="plain"))


def main() -> None:
    log_dir, port, topic = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    broker = EmbeddedBroker(data_dir=log_dir, port=port).start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"segment.bytes": "300"})])
    admin.close()
    tp = TopicPartition(topic, 0)
    write(broker, tp)
    partition = broker.server.replica_manager.partitions[tp]
    state = broker.call(lambda: {**txn_state(partition.log), "hw": partition.high_watermark,
                                 "segments": len(partition.log.segments)})
    print("STATE " + json.dumps(state), flush=True)
    print("READY", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
