"""Exactly-once under failure, single broker: a consume-transform-produce worker (eos_worker.py, confluent-kafka
as a user writes the loop) turns topic A's inputs into topic B's outputs, offsets and outputs in one
transaction, while the worker process or the broker process is kill -9'd at random points (seeded, so a
failure can be replayed). At the end topic B read read_committed holds exactly one output per input, per
partition in input order.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from broker.testing import free_port
from tests.e2e.eos_support import (
    INPUT,
    OUTPUT,
    Worker,
    assert_exactly_once,
    fill_input,
    kill_mid_transaction,
    read_committed_outputs,
)
from tests.e2e.test_transactions import FAST, create_topic

PARTITIONS = 3


def prepare(bootstrap: str, n: int) -> dict[int, list[bytes]]:
    create_topic(bootstrap, INPUT, PARTITIONS)
    create_topic(bootstrap, OUTPUT, PARTITIONS)
    return fill_input(bootstrap, INPUT, n, PARTITIONS)


@pytest.mark.timeout(180)
def test_worker_killed_at_random_points(broker_factory: Any, tmp_path: Path) -> None:
    """The worker kill -9'd mid-transaction KILLS times, restarted each time, then run to completion: the
    restarted instance's init_transactions fences the killed one's open transaction, its consumer resumes
    from the offsets committed with the last committed transaction."""
    n, kills, rng = 600, 5, random.Random(1201)
    broker = broker_factory(FAST)
    inputs = prepare(broker.bootstrap, n)
    worker = Worker(broker.bootstrap, n, tmp_path)
    try:
        for _ in range(kills):
            worker.start()
            assert kill_mid_transaction(worker, rng), "the worker finished before it was killed"
            worker.kill()
        worker.start().finish(90)
        print(worker.summary())  # with -s: how many kills landed inside a transaction
    finally:
        worker.stop()
    assert_exactly_once(inputs, read_committed_outputs(broker.bootstrap, OUTPUT, PARTITIONS))


@pytest.mark.timeout(180)
def test_broker_killed_at_random_points(broker_factory: Any, tmp_path: Path) -> None:
    """The broker process kill -9'd while the worker runs (mid-transaction), restarted on the same data and
    port each time: the transaction coordinator reloads from __transaction_state, the group coordinator from
    __consumer_offsets, the partitions recover their transactions; the worker retries or aborts and
    rewinds, and finishes."""
    n, kills, rng = 800, 3, random.Random(1202)
    data_dir, port = tmp_path / "broker", free_port()
    broker = broker_factory(FAST, process=True, data_dir=data_dir, port=port)
    inputs = prepare(broker.bootstrap, n)
    # Enough transactions to outlast three kills: a commit takes ~10 ms, and the kills follow the worker's
    # output, which they read behind it (400 inputs in 20 transactions were done before the third kill).
    worker = Worker(broker.bootstrap, n, tmp_path, batch=5)
    try:
        worker.start()
        for _ in range(kills):
            assert kill_mid_transaction(worker, rng), "the worker finished before the broker was killed"
            broker.kill()
            broker = broker_factory(FAST, process=True, data_dir=data_dir, port=port)
        worker.finish(90)
        print(worker.summary())  # with -s: how many kills landed inside a transaction
    finally:
        worker.stop()
    assert_exactly_once(inputs, read_committed_outputs(broker.bootstrap, OUTPUT, PARTITIONS))
