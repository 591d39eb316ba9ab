"""The streaming job's parse -> windowed aggregate -> output logic on a local SparkSession, fed by
Spark's file source instead of Kafka (no connector needed): exact aggregates, append-mode
emission by watermark, and restart from the checkpoint with no loss and no double counting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spark_pipeline.events import (
    Aggregate,
    Event,
    batch_totals,
    compare_aggregates,
    expected_aggregates,
    flush_event,
    generate_events,
)
from spark_pipeline.jobs import as_kafka_records, parse_events, windowed_aggregates

WINDOW_MS, WATERMARK_MS = 10_000, 5_000
# Off the window grid, so no watermark lands exactly on a window end.
START_MS = 1_700_000_000_137


def write_events(directory: Path, name: str, events: list[Event]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}.tmp"
    tmp.write_bytes(b"\n".join(e.to_json() for e in events) + b"\n")
    tmp.rename(directory / f"{name}.json")  # the file source must never see a half-written file


def run_available_now(spark: Any, in_dir: Path, out_dir: Path, checkpoint: Path) -> None:
    from pyspark.sql import functions as F
    raw = spark.readStream.format("text").load(str(in_dir)).select(F.col("value").cast("binary").alias("value"))
    query = (windowed_aggregates(parse_events(raw), window="10 seconds", watermark="5 seconds")
             .writeStream.format("json").option("path", str(out_dir))
             .option("checkpointLocation", str(checkpoint)).outputMode("append")
             .trigger(availableNow=True).start())
    assert query.awaitTermination(180), "availableNow query did not finish"
    assert query.exception() is None


def read_output(out_dir: Path) -> list[Aggregate]:
    rows = []
    for f in sorted(out_dir.glob("part-*.json")):
        for line in f.read_text().splitlines():
            d = json.loads(line)
            rows.append(Aggregate(d["key"], d["window_start"], d["window_end"], d["count"], d["sum"]))
    return rows


def test_stream_restart_from_checkpoint_is_exact(spark: Any, tmp_path: Path) -> None:
    first = generate_events(70, start_ms=START_MS, max_disorder_ms=3_000, seed=11)
    second = generate_events(50, start_ms=max(e.event_time for e in first) + 3_500, max_disorder_ms=3_000, seed=12)
    events = first + second
    # The second run's events all come after the first run's: none is late (see expected_aggregates).
    assert min(e.event_time for e in second) > max(e.event_time for e in first)
    in_dir, out_dir, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"

    write_events(in_dir, "part1", first)
    run_available_now(spark, in_dir, out_dir, ckpt)
    after_first = read_output(out_dir)
    assert compare_aggregates(expected_aggregates([first], window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS),
                              after_first) == []

    # Stopped mid-stream; more events arrive; restart from the checkpoint.
    write_events(in_dir, "part2", second + [flush_event(events, WATERMARK_MS, WINDOW_MS)])
    run_available_now(spark, in_dir, out_dir, ckpt)
    total = read_output(out_dir)
    want = expected_aggregates([first, second + [flush_event(events, WATERMARK_MS, WINDOW_MS)]],
                               window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS)
    assert compare_aggregates(want, total) == []
    assert sum(a.count for a in total) == len(events)
    assert sum(a.total for a in total) == sum(e.amount for e in events)


def test_batch_parse_totals_and_sink_records(spark: Any) -> None:
    events = generate_events(40, start_ms=START_MS, seed=5)
    rows = [(e.key.encode(), e.to_json()) for e in events] + [(b"x", b"not json"), (b"y", b'{"key": null}')]
    raw = spark.createDataFrame(rows, "key BINARY, value BINARY")
    from spark_pipeline.jobs import batch_totals as spark_batch_totals
    assert spark_batch_totals(raw) == batch_totals(events)

    records = as_kafka_records(windowed_aggregates(parse_events(raw))).collect()
    got = [Aggregate.from_json(bytes(r["value"])) for r in records]
    assert all(bytes(r["key"]).decode() == a.key for r, a in zip(records, got, strict=True))
    # A batch query sees every window (no watermark eviction), so compare with every window's totals.
    tail = [flush_event(events, WATERMARK_MS, WINDOW_MS)]
    every = [a for a in expected_aggregates([events + tail], window_ms=WINDOW_MS, watermark_ms=WATERMARK_MS)]
    assert compare_aggregates(every, got) == []
