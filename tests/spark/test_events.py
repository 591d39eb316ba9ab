"""The pipeline's pure parts: event JSON, the generator, the expected-aggregate model, the checker."""

from __future__ import annotations

import pytest

from spark_pipeline.events import (
    FLUSH_KEY,
    Aggregate,
    ConflictingRows,
    Event,
    batch_totals,
    compare_aggregates,
    expected_aggregates,
    flush_event,
    generate_events,
    one_row_per_window,
    window_of,
)
from spark_pipeline.jobs import connector_coordinates, connector_override


def test_event_json_round_trip() -> None:
    e = Event("k", 1_700_000_000_123, 42)
    assert e.to_json() == b'{"key":"k","event_time":1700000000123,"amount":42}'
    assert Event.from_json(e.to_json()) == e
    a = Aggregate("k", 10_000, 20_000, 3, 7)
    assert Aggregate.from_json(a.to_json()) == a


def test_generator_is_deterministic_and_bounded() -> None:
    a = generate_events(50, seed=3, max_disorder_ms=500)
    assert a == generate_events(50, seed=3, max_disorder_ms=500)
    assert a != generate_events(50, seed=4, max_disorder_ms=500)
    assert {e.key for e in a} <= {"a", "b", "c"}
    assert all(1 <= e.amount < 100 for e in a)


def test_window_alignment_is_epoch_based() -> None:
    assert window_of(1_700_000_003_500, 10_000) == (1_700_000_000_000, 1_700_000_010_000)
    assert window_of(1_700_000_010_000, 10_000) == (1_700_000_010_000, 1_700_000_020_000)


def test_expected_aggregates_by_hand() -> None:
    w, wm = 10_000, 5_000
    events = [Event("a", 1_000, 1), Event("a", 9_999, 2), Event("b", 5_000, 10), Event("a", 10_000, 4),
              Event("a", 21_000, 8)]
    # max event time 21 000 -> watermark 16 000: only windows ending at or before 16 000 (the first) close.
    assert expected_aggregates([events], window_ms=w, watermark_ms=wm) == [
        Aggregate("a", 0, 10_000, 2, 3), Aggregate("b", 0, 10_000, 1, 10)]
    flushed = events + [flush_event(events, wm, w)]
    got = expected_aggregates([flushed], window_ms=w, watermark_ms=wm)
    assert got == [Aggregate("a", 0, 10_000, 2, 3), Aggregate("a", 10_000, 20_000, 1, 4),
                   Aggregate("a", 20_000, 30_000, 1, 8), Aggregate("b", 0, 10_000, 1, 10)]
    assert all(a.key != FLUSH_KEY for a in got)


def test_expected_aggregates_across_runs_drops_late_events_of_closed_windows() -> None:
    w, wm = 10_000, 5_000
    run1 = [Event("a", 1_000, 1), Event("a", 30_000, 1)]          # watermark 25 000 closes [0, 10 000)
    run2 = [Event("a", 2_000, 100), Event("a", 31_000, 2)]        # 2 000 is late: its window is final
    got = expected_aggregates([run1, run2 + [flush_event(run1 + run2, wm, w)]], window_ms=w, watermark_ms=wm)
    assert got == [Aggregate("a", 0, 10_000, 1, 1), Aggregate("a", 30_000, 40_000, 2, 3)]


def test_split_runs_equal_one_run_when_nothing_is_late() -> None:
    events = generate_events(200, start_ms=1_700_000_000_137)
    tail = [flush_event(events, 5_000, 10_000)]
    whole = expected_aggregates([events + tail], window_ms=10_000, watermark_ms=5_000)
    split = expected_aggregates([events[:120], events[120:] + tail], window_ms=10_000, watermark_ms=5_000)
    assert whole == split
    assert sum(a.count for a in whole) == 200
    assert sum(a.total for a in whole) == sum(e.amount for e in events)


def test_compare_finds_loss_duplicates_and_wrong_rows() -> None:
    rows = [Aggregate("a", 0, 10, 2, 3), Aggregate("b", 0, 10, 1, 1)]
    assert compare_aggregates(rows, list(reversed(rows))) == []
    assert any("missing" in p for p in compare_aggregates(rows, rows[:1]))
    assert any("duplicate" in p for p in compare_aggregates(rows, rows + rows[:1]))
    assert any("wrong" in p for p in compare_aggregates(rows, [rows[0], Aggregate("b", 0, 10, 2, 2)]))
    assert any("unexpected" in p for p in compare_aggregates(rows[:1], rows))


def test_one_row_per_window_drops_replayed_copies_and_refuses_conflicts() -> None:
    rows = [Aggregate("b", 0, 10, 1, 1), Aggregate("a", 10, 20, 2, 3), Aggregate("a", 0, 10, 2, 3)]
    replayed = rows + rows[1:]
    assert compare_aggregates(rows, replayed) != []
    assert one_row_per_window(replayed) == sorted(rows, key=lambda a: (a.key, a.window_start))
    with pytest.raises(ConflictingRows):
        one_row_per_window(rows + [Aggregate("a", 0, 10, 3, 4)])


def test_batch_totals() -> None:
    assert batch_totals([Event("a", 0, 2), Event("b", 0, 3), Event("a", 5, 4)]) == {"a": (2, 6), "b": (1, 3)}


def test_connector_override_from_environment() -> None:
    assert connector_override({}) == {}
    assert connector_override({"SPARK_KAFKA_JARS": "/a.jar:/b.jar"}) == {"spark.jars": "/a.jar,/b.jar"}
    coords = connector_coordinates()
    assert coords.startswith("org.apache.spark:spark-sql-kafka-0-10_2.")
    assert connector_override({"SPARK_KAFKA_PACKAGES": coords}) == {"spark.jars.packages": coords}
