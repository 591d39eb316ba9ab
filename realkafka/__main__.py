"""`python -m realkafka fetch`: resolve the jars the tests use (or those named) into the local cache."""

from __future__ import annotations

import argparse
import sys
import time

from realkafka import (
    CONNECT_KAFKA,
    JAVA_CLIENTS,
    KRAFT_KAFKA_41,
    KRAFT_KAFKA_LATEST,
    STREAMS_KAFKA,
    ZOOKEEPER_KAFKA,
    jars,
)


def installed_pyspark() -> str | None:
    try:
        import pyspark
    except ImportError:
        return None
    return str(pyspark.__version__)


def default_bundles() -> list[jars.Bundle]:
    bundles = [jars.kafka_server(v) for v in (ZOOKEEPER_KAFKA, KRAFT_KAFKA_41, KRAFT_KAFKA_LATEST)]
    bundles += [jars.kafka_clients(v) for v in JAVA_CLIENTS]
    bundles += [jars.kafka_streams(STREAMS_KAFKA), jars.kafka_connect(CONNECT_KAFKA)]
    spark = installed_pyspark()
    if spark is not None:
        bundles.append(jars.spark_kafka(spark))
    return bundles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realkafka")
    sub = parser.add_subparsers(dest="command", required=True)
    fetch = sub.add_parser("fetch", help="resolve jars from Maven Central into the cache")
    fetch.add_argument("--kafka", action="append", default=[], help="a kafka_2.13 version (repeatable)")
    fetch.add_argument("--clients", action="append", default=[], help="a kafka-clients version (repeatable)")
    args = parser.parse_args(argv)
    bundles = [jars.kafka_server(v) for v in args.kafka] + [jars.kafka_clients(v) for v in args.clients]
    if not bundles:
        bundles = default_bundles()
    for bundle in bundles:
        started = time.monotonic()
        try:
            path = jars.resolve(bundle)
        except jars.JarsUnavailable as e:
            print(f"{bundle.name}: {e}", file=sys.stderr)
            return 1
        print(f"{bundle.name}: {len(list(path.glob('*.jar')))} jars in {path} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
