"""The pipeline through Spark's Kafka source and sink against our broker, with the connector matching the
installed pyspark from Maven Central (spark_pipeline.jobs.connector_jars): structured streaming stopped and
restarted from its checkpoint, the sink's at-least-once replay and a reader that is exact anyway, batch reads by
offsets, by timestamps and read_committed over transactions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_pipeline import jobs
from spark_pipeline.events import (
    batch_totals,
    compare_aggregates,
    expected_aggregates,
    flush_event,
    generate_events,
    one_row_per_window,
)
from spark_pipeline.kafka_io import create_topic, produce_events, read_aggregates

WINDOW_MS, WATERMARK_MS = 10_000, 5_000
START_MS = 1_700_000_000_137


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[str]:
    from compat.targets import EmbeddedTarget
    with EmbeddedTarget() as target:
        yield target.bootstrap


def topic(prefix: str) -> str:
    return f"spark-{prefix}-{uuid.uuid4().hex[:8]}"


def run_available_now(spark: Any, bootstrap: str, source: str, sink: str, checkpoint: Path) -> None:
    query = jobs.start_streaming_job(spark, bootstrap, source, sink, str(checkpoint),
                                     window="10 seconds", watermark="5 seconds")
    assert query.awaitTermination(180), "availableNow query did not finish"
    assert query.exception() is None


def expected(*runs: list[Any]) -> list[Any]:
    return expected_aggregates(list(runs), window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS)


def test_streaming_stopped_and_restarted_from_checkpoint(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    """A running query (processing-time trigger) is stopped once it has caught up; more events arrive; the job
    restarts from the checkpoint: every window exactly once, no event lost or counted twice."""
    source, sink = topic("events"), topic("aggregates")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 1)
    first = generate_events(80, start_ms=START_MS, max_disorder_ms=2_000, seed=1)
    second = generate_events(60, start_ms=max(e.event_time for e in first) + 2_500, max_disorder_ms=2_000, seed=2)
    second_run = second + [flush_event(first + second, WATERMARK_MS, WINDOW_MS)]
    produce_events(bootstrap, source, first, partitions=2)

    query = jobs.start_streaming_job(spark, bootstrap, source, sink, str(tmp_path / "ckpt"), available_now=False,
                                     processing_time="1 second")
    try:
        query.processAllAvailable()  # every offset read and its batches (and the watermark's) committed
    finally:
        query.stop()
    assert query.exception() is None
    assert compare_aggregates(expected(first), read_aggregates(bootstrap, sink)) == []

    produce_events(bootstrap, source, second_run, partitions=2)
    run_available_now(spark, bootstrap, source, sink, tmp_path / "ckpt")
    got = read_aggregates(bootstrap, sink)
    assert compare_aggregates(expected(first, second_run), got) == []
    assert sum(a.count for a in got) == len(first) + len(second)
    assert sum(a.total for a in got) == sum(e.amount for e in first + second)


def test_sink_is_at_least_once_and_a_reader_keyed_by_window_is_exact(spark: Any, bootstrap: str,
                                                                    tmp_path: Path) -> None:
    """Spark's Kafka sink has no transactions: a micro-batch whose rows were written but whose commit did not
    reach the checkpoint (the driver died in between) runs again on restart and writes its rows again. Removing
    the last entry of the checkpoint's commit log is exactly that state. The sink topic then holds duplicates;
    a reader keeping one row per (key, window) gets the exact aggregates."""
    source, sink = topic("events"), topic("aggregates")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 1)
    events = generate_events(100, start_ms=START_MS, max_disorder_ms=2_000, seed=3)
    stream = events + [flush_event(events, WATERMARK_MS, WINDOW_MS)]
    produce_events(bootstrap, source, stream, partitions=2)
    checkpoint = tmp_path / "ckpt"
    run_available_now(spark, bootstrap, source, sink, checkpoint)
    want = expected(stream)
    assert compare_aggregates(want, read_aggregates(bootstrap, sink)) == []

    commits = checkpoint / "commits"
    last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
    (commits / str(last)).unlink()
    (commits / f".{last}.crc").unlink(missing_ok=True)
    run_available_now(spark, bootstrap, source, sink, checkpoint)
    assert (commits / str(last)).exists(), "the uncommitted batch was not run again"

    got = read_aggregates(bootstrap, sink)
    problems = compare_aggregates(want, got)
    assert problems and all(p.startswith("duplicate row") for p in problems), problems
    assert len(got) > len(want)
    assert one_row_per_window(got) == want


def test_batch_offset_and_timestamp_ranges(spark: Any, bootstrap: str) -> None:
    source = topic("batch")
    create_topic(bootstrap, source, 1)
    events = generate_events(100, start_ms=START_MS, step_ms=1000)  # in order: offsets follow timestamps
    produce_events(bootstrap, source, events, partitions=1)

    everything = jobs.kafka_batch(spark, bootstrap, source)
    assert jobs.batch_totals(everything) == batch_totals(events)

    raw = jobs.kafka_batch(spark, bootstrap, source, starting_offsets=jobs.offsets_json(source, {0: 10}),
                           ending_offsets=jobs.offsets_json(source, {0: 50}))
    assert jobs.batch_totals(raw) == batch_totals(events[10:50])

    start_ms, end_ms = events[20].event_time, events[70].event_time
    by_time = jobs.kafka_batch_by_timestamp(spark, bootstrap, source, 1, start_ms=start_ms, end_ms=end_ms)
    assert jobs.batch_totals(by_time) == batch_totals([e for e in events if start_ms <= e.event_time < end_ms])


def test_batch_read_committed_leaves_out_aborted_transactions(spark: Any, bootstrap: str) -> None:
    """Input written in transactions (committed, aborted, committed): read_committed totals hold only the
    committed events; read_uncommitted, Kafka's default, holds all of them."""
    source = topic("txn")
    create_topic(bootstrap, source, 2)
    committed, aborted, later = (generate_events(30, start_ms=START_MS, seed=seed) for seed in (4, 5, 6))
    txn = f"spark-input-{uuid.uuid4().hex[:8]}"
    produce_events(bootstrap, source, committed, partitions=2, transactional_id=txn)
    produce_events(bootstrap, source, aborted, partitions=2, transactional_id=txn, commit=False)
    produce_events(bootstrap, source, later, partitions=2, transactional_id=txn)

    read_committed = jobs.kafka_batch(spark, bootstrap, source, isolation_level="read_committed")
    assert jobs.batch_totals(read_committed) == batch_totals(committed + later)
    everything = jobs.kafka_batch(spark, bootstrap, source)
    assert jobs.batch_totals(everything) == batch_totals(committed + aborted + later)
