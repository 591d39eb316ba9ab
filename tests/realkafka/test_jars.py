"""realkafka.jars without Maven: the logging binding added to a bundle, and when a cached bundle counts as
complete."""

from __future__ import annotations

from pathlib import Path

from realkafka import jars


def test_a_log4j2_binding_added_by_name_brings_log4j_core_and_api(tmp_path: Path) -> None:
    # Connect's artifacts bring no Log4j: `dependency:copy` copies each named artifact alone, so the API is named.
    assert jars._binding(jars.kafka_connect("4.3.1"), tmp_path) == [
        "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3", "org.apache.logging.log4j:log4j-core:2.24.3",
        "org.apache.logging.log4j:log4j-api:2.24.3"]
    # Kafka's server brings its own core and API: only the SLF4J binding of the same version is added.
    (tmp_path / "log4j-core-2.25.5.jar").touch()
    assert jars._binding(jars.kafka_server("4.4.0"), tmp_path) == ["org.apache.logging.log4j:log4j-slf4j-impl:2.25.5"]


def test_a_cached_bundle_missing_a_jar_of_its_binding_is_resolved_again(tmp_path: Path) -> None:
    bundle = jars.kafka_connect("4.3.1")
    assert not jars._complete(bundle, tmp_path)  # never resolved
    stamp = tmp_path / ".resolved"
    stamp.write_text("connect-runtime-4.3.1.jar\nlog4j-core-2.24.3.jar\nlog4j-slf4j-impl-2.24.3.jar\n")
    assert not jars._complete(bundle, tmp_path)  # resolved before Log4j's API was named
    stamp.write_text(stamp.read_text() + "log4j-api-2.24.3.jar\n")
    assert jars._complete(bundle, tmp_path)
    assert jars._complete(jars.spark_kafka("4.2.0"), tmp_path)  # no binding of its own
