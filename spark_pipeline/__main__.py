"""``python -m spark_pipeline``: generate events, run the streaming or batch job, check results.

    python -m spark_pipeline generate --bootstrap H:P --topic events --count 1000 [--flush]
    python -m spark_pipeline stream   --bootstrap H:P --source events --sink aggregates \\
                                      --checkpoint /tmp/ckpt [--continuous] [--window "10 seconds"]
    python -m spark_pipeline batch    --bootstrap H:P --topic events \\
                                      [--starting-offsets '{"events":{"0":0}}' --ending-offsets '{"events":{"0":-1}}']
                                      [--start-ms T --end-ms T --partitions N] [--isolation-level read_committed]
    python -m spark_pipeline coordinates     # the connector's Maven coordinates for this pyspark
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys

from spark_pipeline import events as ev
from spark_pipeline import jobs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spark_pipeline", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="produce deterministic JSON events")
    g.add_argument("--bootstrap", required=True)
    g.add_argument("--topic", required=True)
    g.add_argument("--count", type=int, default=1000)
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--partitions", type=int, default=1)
    g.add_argument("--flush", action="store_true",
                   help="append an event closing every window (default 10 s window, 5 s watermark)")
    s = sub.add_parser("stream", help="the structured-streaming job")
    s.add_argument("--bootstrap", required=True)
    s.add_argument("--source", required=True)
    s.add_argument("--sink", required=True)
    s.add_argument("--checkpoint", required=True)
    s.add_argument("--window", default="10 seconds")
    s.add_argument("--watermark", default="5 seconds")
    s.add_argument("--starting-offsets", default="earliest")
    s.add_argument("--continuous", action="store_true", help="run until stopped (default: availableNow)")
    b = sub.add_parser("batch", help="the batch job over an offset or timestamp range")
    b.add_argument("--bootstrap", required=True)
    b.add_argument("--topic", required=True)
    b.add_argument("--starting-offsets", default="earliest")
    b.add_argument("--ending-offsets", default="latest")
    b.add_argument("--start-ms", type=int)
    b.add_argument("--end-ms", type=int)
    b.add_argument("--partitions", type=int, default=1)
    b.add_argument("--isolation-level", choices=["read_uncommitted", "read_committed"], default=None,
                   help="read_committed leaves out aborted transactions (default: Kafka's read_uncommitted)")
    sub.add_parser("coordinates", help="print the connector's Maven coordinates")
    args = p.parse_args(argv)

    if args.cmd != "generate" and importlib.util.find_spec("pyspark") is None:
        print("the Spark pipeline needs the 'pyspark' package: pip install 'kafka-wire-broker[spark]'", file=sys.stderr)
        return 2
    if args.cmd == "coordinates":
        print(jobs.connector_coordinates())
        return 0
    if args.cmd == "generate":
        from spark_pipeline.kafka_io import produce_events
        events = ev.generate_events(args.count, seed=args.seed)
        if args.flush:
            events.append(ev.flush_event(events, watermark_ms=5_000, window_ms=10_000))
        produce_events(args.bootstrap, args.topic, events, partitions=args.partitions)
        print(f"produced {len(events)} events to {args.topic}")
        return 0
    from realkafka.jars import JarsUnavailable
    try:
        spark = jobs.build_spark()
    except JarsUnavailable as e:
        print(f"Spark's Kafka connector {jobs.connector_coordinates()} could not be resolved from Maven Central "
              f"(SPARK_KAFKA_JARS or SPARK_KAFKA_PACKAGES give it instead): {e}", file=sys.stderr)
        return 2
    try:
        if args.cmd == "stream":
            query = jobs.start_streaming_job(spark, args.bootstrap, args.source, args.sink, args.checkpoint,
                                             window=args.window, watermark=args.watermark,
                                             starting_offsets=args.starting_offsets,
                                             available_now=not args.continuous)
            query.awaitTermination()
            return 0
        if args.start_ms is not None and args.end_ms is not None:
            raw = jobs.kafka_batch_by_timestamp(spark, args.bootstrap, args.topic, args.partitions,
                                                start_ms=args.start_ms, end_ms=args.end_ms)
        else:
            raw = jobs.kafka_batch(spark, args.bootstrap, args.topic, starting_offsets=args.starting_offsets,
                                   ending_offsets=args.ending_offsets, isolation_level=args.isolation_level)
        print(json.dumps({k: {"count": n, "sum": t} for k, (n, t) in sorted(jobs.batch_totals(raw).items())}))
        return 0
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
