"""Exactly-once under failure in a 3-broker cluster: the consume-transform-produce worker (tests/e2e/eos_worker.py)
runs while the broker hosting its transaction coordinator (FindCoordinator key type 1 for its transactional.id)
is kill -9'd mid-transaction and restarted, a few times (seeded). Topics A and B have replication factor 3 and
min.insync.replicas 2, so one broker down never blocks a write; the killed broker usually leads some of A's,
B's and __consumer_offsets' partitions too. The coordinator fails over with its __transaction_state partition
(loaded from a replica) and completes or aborts what was in flight; markers reach partition leaders that moved.
At the end B read read_committed holds exactly one output per input, per partition in input order.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.cluster.support import Zk, create_topic, start_cluster, txn_coordinator, wait_isr, wait_until
from tests.e2e.eos_support import (
    INPUT,
    OUTPUT,
    TXN_ID,
    Worker,
    assert_exactly_once,
    fill_input,
    kill_mid_transaction,
    read_committed_outputs,
)

PARTITIONS = 3
OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
             "transaction.state.log.num.partitions": "3"}
# every partition a failover involves; each is back to a full ISR before the next kill (one failure at a time)
INTERNAL = {"__transaction_state": 3, "__consumer_offsets": 4, INPUT: PARTITIONS, OUTPUT: PARTITIONS}


@pytest.mark.timeout(300)
def test_coordinator_broker_killed_at_random_points(tmp_path: Path) -> None:
    n, kills, rng = 450, 3, random.Random(1203)
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    worker = Worker(cluster.bootstrap, n, tmp_path)
    try:
        for topic in (INPUT, OUTPUT):
            create_topic(cluster.bootstrap, topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
        # The input arrives in parts, one before each kill: the worker cannot run out of work during a
        # recovery (it kept processing meanwhile and, on a fast run, finished before the last kill).
        part = n // (kills + 1)
        inputs = fill_input(cluster.bootstrap, INPUT, part, PARTITIONS)
        worker.start()
        for k in range(kills):
            worker.in_transaction()  # take in what it printed so far: the kill point comes from new lines
            fill_input(cluster.bootstrap, INPUT, part if k < kills - 1 else n - part * kills, PARTITIONS, inputs)
            assert kill_mid_transaction(worker, rng), "the worker finished before its coordinator was killed"
            coordinator = txn_coordinator(cluster.ports[0], TXN_ID)
            assert coordinator in (0, 1, 2), coordinator
            cluster.brokers[coordinator].kill()
            survivors = [cluster.ports[b] for b in range(3) if b != coordinator]
            wait_until(lambda: txn_coordinator(survivors[0], TXN_ID) not in (-1, coordinator), 30,  # noqa: B023
                       "the coordinator moving to a surviving broker")
            cluster.restart(coordinator)
            for topic, partitions in INTERNAL.items():
                wait_isr(zk, topic, partitions, {0, 1, 2}, 60)
        worker.finish(120)
        print(worker.summary())  # with -s: how many kills landed inside a transaction
        assert_exactly_once(inputs, read_committed_outputs(cluster.bootstrap, OUTPUT, PARTITIONS))
    finally:
        worker.stop()
        zk.close()
        cluster.cleanup()
