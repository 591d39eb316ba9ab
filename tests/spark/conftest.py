"""One local SparkSession (local[2], 2 shuffle partitions) for every Spark test in the session.

It carries Spark's Kafka connector when SPARK_KAFKA_JARS / SPARK_KAFKA_PACKAGES is set; the
connector tests skip with that reason otherwise.
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
    from spark_pipeline.jobs import build_spark
    session = build_spark("spark-pipeline-tests")
    yield session
    session.stop()
