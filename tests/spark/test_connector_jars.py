"""Which of the connector bundle's jars Spark is given: the connector and the dependencies pyspark lacks, never
a second version of a jar pyspark ships (the bundle is resolved from Maven Central, as in CI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from realkafka import jars
from spark_pipeline.jobs import connector_config, connector_coordinates, connector_jars, pyspark_jars


def test_same_artifact_reads_maven_file_names() -> None:
    assert jars.same_artifact("slf4j-api-1.7.36.jar", "slf4j-api-2.0.17.jar")
    assert jars.same_artifact("scala-library-2.13.15.jar", "scala-library-2.13.18.jar")
    assert jars.same_artifact("zstd-jni-1.5.6-4.jar", "zstd-jni-1.5.7-2.jar")
    assert jars.same_artifact("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13-4.1.0.jar")
    assert not jars.same_artifact("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql_2.13-4.2.0.jar")
    assert not jars.same_artifact("log4j-1.2-api-2.24.3.jar", "log4j-api-2.24.3.jar")
    assert not jars.same_artifact("kafka-clients-3.9.2.jar", "kafka_2.13-3.9.2.jar")


def test_missing_from_drops_what_the_installation_ships(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundle_dir, installed = tmp_path / "bundle", tmp_path / "installed"
    bundle_dir.mkdir()
    installed.mkdir()
    for name in ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar", "slf4j-api-1.7.36.jar"):
        (bundle_dir / name).touch()
    (bundle_dir / ".resolved").touch()
    for name in ("slf4j-api-2.0.17.jar", "spark-sql_2.13-4.2.0.jar"):
        (installed / name).touch()
    monkeypatch.setattr(jars, "resolve", lambda bundle: bundle_dir)
    got = [p.name for p in jars.missing_from(jars.spark_kafka("4.2.0"), installed)]
    assert got == ["kafka-clients-3.9.2.jar", "spark-sql-kafka-0-10_2.13-4.2.0.jar"]


def test_connector_jars_for_the_installed_pyspark() -> None:
    import pyspark
    names = sorted(p.name for p in connector_jars())
    version = pyspark.__version__
    assert connector_coordinates() == f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
    assert f"spark-sql-kafka-0-10_2.13-{version}.jar" in names
    assert f"spark-token-provider-kafka-0-10_2.13-{version}.jar" in names
    assert any(n.startswith("kafka-clients-") for n in names)
    assert any(n.startswith("commons-pool2-") for n in names)
    shipped = [p.name for p in pyspark_jars().glob("*.jar")]
    assert not [(n, s) for n in names for s in shipped if jars.same_artifact(n, s)]
    assert connector_config({}) == {"spark.jars": ",".join(str(p) for p in connector_jars())}
