"""The pipeline through Spark's Kafka source and sink against our broker, with the connector matching the
installed pyspark from Maven Central (spark_pipeline.jobs.connector_jars)."""

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


def run_job(spark: Any, bootstrap: str, source: str, sink: str, checkpoint: Path) -> None:
    query = jobs.start_streaming_job(spark, bootstrap, source, sink, str(checkpoint),
                                     window="10 seconds", watermark="5 seconds")
    assert query.awaitTermination(180), "availableNow query did not finish"
    assert query.exception() is None


def test_streaming_job_exact_aggregates(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    source, sink = topic("events"), topic("aggregates")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 1)
    events = generate_events(150, start_ms=START_MS, max_disorder_ms=2_000)
    stream = events + [flush_event(events, WATERMARK_MS, WINDOW_MS)]
    produce_events(bootstrap, source, stream, partitions=2)
    run_job(spark, bootstrap, source, sink, tmp_path / "ckpt")
    got = read_aggregates(bootstrap, sink)
    assert compare_aggregates(expected_aggregates([stream], window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS),
                              got) == []


def test_streaming_job_restart_from_checkpoint(spark: Any, bootstrap: str, tmp_path: Path) -> None:
    source, sink = topic("events"), topic("aggregates")
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 1)
    first = generate_events(80, start_ms=START_MS, max_disorder_ms=2_000, seed=1)
    second = generate_events(60, start_ms=max(e.event_time for e in first) + 2_500, max_disorder_ms=2_000, seed=2)
    second_run = second + [flush_event(first + second, WATERMARK_MS, WINDOW_MS)]
    produce_events(bootstrap, source, first, partitions=2)
    run_job(spark, bootstrap, source, sink, tmp_path / "ckpt")
    assert compare_aggregates(expected_aggregates([first], window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS),
                              read_aggregates(bootstrap, sink)) == []
    produce_events(bootstrap, source, second_run, partitions=2)
    run_job(spark, bootstrap, source, sink, tmp_path / "ckpt")
    got = read_aggregates(bootstrap, sink)
    want = expected_aggregates([first, second_run], window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS)
    assert compare_aggregates(want, got) == []
    assert sum(a.count for a in got) == len(first) + len(second)


def test_batch_job_offset_and_timestamp_ranges(spark: Any, bootstrap: str) -> None:
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
