"""The package as a user installs it: the wheel built from this checkout, installed into a fresh virtual environment
without extras (only the declared dependencies, from PyPI), runs a broker with its `kafka-wire-broker` console
script that kcat produces to and consumes from, serves its metrics, and gives a project outside this repository the
`kafka_broker` pytest fixture. The wheel and the environment are made once for the module (about a minute)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.testing import free_port
from fuzz.record import kcat_path
from tests.e2e.support import wait_until

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("packaging")
    wheels = base / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
                   check=True, timeout=600, cwd=base)
    [wheel] = wheels.glob("kafka_wire_broker-*.whl")
    env_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120)
    # the wheel alone (no extras), and pytest for the project outside the repository
    subprocess.run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel), "pytest"],
                   check=True, timeout=900, cwd=base)
    yield env_dir
    shutil.rmtree(base, ignore_errors=True)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_the_console_script_runs_a_broker_stock_clients_use(venv: Path, tmp_path: Path) -> None:
    port, metrics_port = free_port(), free_port()
    log = open(tmp_path / "broker.log", "wb")
    proc = subprocess.Popen([str(venv / "bin" / "kafka-wire-broker"), "--override", f"log.dirs={tmp_path / 'data'}",
                             "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"metrics.prometheus.listener=http://127.0.0.1:{metrics_port}"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, env=_env())
    try:
        wait_until(lambda: proc.poll() is not None or " started in " in (tmp_path / "broker.log").read_text(), 60,
                   "the broker's start")
        assert proc.poll() is None, (tmp_path / "broker.log").read_text()
        bootstrap = f"127.0.0.1:{port}"
        records = b"".join(b"r%d\n" % i for i in range(100))
        subprocess.run([kcat_path(), "-b", bootstrap, "-t", "pkg", "-P"], input=records, check=True, timeout=60)
        out = subprocess.run([kcat_path(), "-b", bootstrap, "-t", "pkg", "-C", "-o", "beginning", "-e", "-q"],
                             capture_output=True, check=True, timeout=60).stdout
        assert out == records
        text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
        assert 'kafka_server_brokertopicmetrics_messagesin_total{topic="pkg"} 100.0' in text
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
        log.close()
    # the same script's subcommands
    dump = subprocess.run([str(venv / "bin" / "kafka-wire-broker"), "dump-log", "--files",
                           str(next((tmp_path / "data" / "pkg-0").glob("*.log")))],
                          capture_output=True, text=True, timeout=60, env=_env())
    assert dump.returncode == 0 and "baseOffset: 0" in dump.stdout, dump.stderr


def test_a_project_outside_the_repository_uses_the_kafka_broker_fixture(venv: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_uses_kafka.py").write_text(textwrap.dedent("""
        import pytest
        from kafka import KafkaConsumer, KafkaProducer


        @pytest.mark.kafka_config({"num.partitions": "3"})
        def test_round_trip(kafka_broker):
            producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
            producer.send("events", b"hello").get(timeout=30)
            producer.close()
            consumer = KafkaConsumer("events", bootstrap_servers=kafka_broker.bootstrap,
                                     auto_offset_reset="earliest", consumer_timeout_ms=10000)
            assert [m.value for m in consumer] == [b"hello"]
            assert len(consumer.partitions_for_topic("events")) == 3
            consumer.close()
    """))
    started = time.monotonic()
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=project, capture_output=True, text=True, timeout=300, env=_env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert time.monotonic() - started < 120
