"""One local SparkSession (local[2], 2 shuffle partitions) for every Spark test in the session.

It carries Spark's Kafka connector matching the installed pyspark, resolved from Maven Central on first use
(SPARK_KAFKA_JARS / SPARK_KAFKA_PACKAGES give other jars); a connector Maven cannot resolve fails the tests
with Maven's reason. The compat matrix's spark client shares the session when both run in one pytest run
(SparkSession.builder.getOrCreate).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.skip("no Java runtime on PATH (Spark needs Java 17)")
    from spark_pipeline.jobs import SHORT_LIVED_BROKERS, build_spark
    session = build_spark("spark-pipeline-tests", extra=SHORT_LIVED_BROKERS)
    yield session
    session.stop()
