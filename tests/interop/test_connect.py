"""Kafka Connect (from Maven Central, `realkafka.CONNECT_KAFKA`) against our broker: a distributed worker
(`ConnectDistributed`, its REST API on a loopback port it picks) keeps its configs, offsets and statuses in
compacted topics of ours and its workers in a group of ours; a FileStreamSource connector created through the
REST API reads a file into a topic and a FileStreamSink connector writes that topic to another file, which ends
equal to the first, lines appended later included.

What it relies on in the broker: CreateTopics with configs (the three compacted internal topics) and
DescribeConfigs (the worker checks their cleanup.policy), the classic group protocol with Connect's own protocol
type ("connect", its leader's assignments), a producer and consumers of the internal topics read to their end
(ListOffsets, Fetch), the source's producer and the sink's consumer group (offset commits).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from realkafka import CONNECT_KAFKA, jars
from realkafka.node import logging_options
from tests.interop.support import APP_JVM_OPTIONS, JavaApp, Nodes


def rest(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def rest_port(connect: JavaApp, seconds: float) -> int:
    """The port the worker's REST server bound (`listeners` asks for any free one), from its log."""
    deadline = time.monotonic() + seconds
    while True:
        log = connect.directory / "server.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        found = re.search(r"REST server listening at http://127\.0\.0\.1:(\d+)/", text)
        if found:
            return int(found.group(1))
        assert connect.running(), f"the Connect worker exited ({connect.proc and connect.proc.returncode})"
        assert time.monotonic() < deadline, f"the Connect worker's REST server did not start within {seconds}s"
        time.sleep(0.2)


def create_connector(connect: JavaApp, port: int, name: str, config: dict[str, str]) -> None:
    """POST /connectors, again while the worker answers that it is still joining its group (409) or starting."""
    deadline = time.monotonic() + 90
    while True:
        try:
            status, answer = rest(port, "POST", "/connectors", {"name": name, "config": config})
        except (urllib.error.URLError, ConnectionError) as e:
            status, answer = 0, str(e)
        if status == 201:
            return
        assert connect.running(), f"the Connect worker exited ({connect.proc and connect.proc.returncode})"
        assert time.monotonic() < deadline, f"creating {name}: {status} {answer}"
        time.sleep(0.5)


def running(port: int, name: str) -> bool:
    status, answer = rest(port, "GET", f"/connectors/{name}/status")
    return status == 200 and answer["connector"]["state"] == "RUNNING" and [
        t["state"] for t in answer["tasks"]] == ["RUNNING"]


def wait_until_equal(source: Path, sink: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not (sink.exists() and sink.read_bytes() == source.read_bytes()):
        if time.monotonic() > deadline:
            got = sink.read_text().splitlines() if sink.exists() else []
            raise AssertionError(f"the sink file has {len(got)} of {len(source.read_text().splitlines())} lines "
                                 f"after {seconds}s (last: {got[-1:]})")
        time.sleep(0.2)


def test_a_distributed_worker_moves_a_file_through_a_topic(nodes: Nodes, tmp_path: Path) -> None:
    broker = nodes.our_broker()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    # One partition: the sink writes lines in the order the topic holds them, which is the file's order only there.
    admin.create_topics([NewTopic("file-lines", 1, 1)])["file-lines"].result(30)
    source, sink = tmp_path / "source.txt", tmp_path / "sink.txt"
    lines = [f"line {i}: {'ünïcödé ' if i % 7 == 0 else ''}{'x' * (i % 50)}" for i in range(500)]
    source.write_text("".join(f"{x}\n" for x in lines))

    worker = tmp_path / "connect-distributed.properties"
    worker.write_text("".join(f"{k}={v}\n" for k, v in {
        "bootstrap.servers": broker.bootstrap,
        "group.id": "connect-interop",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "config.storage.topic": "connect-configs", "config.storage.replication.factor": "1",
        "offset.storage.topic": "connect-offsets", "offset.storage.replication.factor": "1",
        "status.storage.topic": "connect-status", "status.storage.replication.factor": "1",
        "offset.flush.interval.ms": "1000",
        "listeners": "http://127.0.0.1:0",  # a free loopback port, bound by the worker (no race for it)
        "plugin.discovery": "service_load",  # the FileStream connectors are on the classpath, with manifests
    }.items()))
    logging = logging_options(CONNECT_KAFKA, nodes.directory / "connect")  # Kafka's INFO log in connect/server.log
    connect = nodes.java_app("connect", jars.classpath(jars.kafka_connect(CONNECT_KAFKA)),
                             "org.apache.kafka.connect.cli.ConnectDistributed", [str(worker)],
                             jvm_options=(*APP_JVM_OPTIONS, *logging))
    connect.start()
    port = rest_port(connect, 90)

    create_connector(connect, port, "file-source", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "tasks.max": "1",
        "file": str(source), "topic": "file-lines"})
    create_connector(connect, port, "file-sink", {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "tasks.max": "1",
        "file": str(sink), "topics": "file-lines"})
    wait_until_equal(source, sink, 90)
    assert running(port, "file-source") and running(port, "file-sink")

    # The source keeps reading the file: lines appended now arrive in the sink file too.
    more = [f"appended {i}" for i in range(100)]
    with source.open("a") as f:
        f.write("".join(f"{x}\n" for x in more))
    wait_until_equal(source, sink, 60)

    # Through the topic: every line once and in order, as the JSON converter wrote it (schema and payload).
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "file-lines-reader",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["file-lines"])
    payloads: list[str] = []
    deadline = time.monotonic() + 30
    while len(payloads) < len(lines) + len(more) and time.monotonic() < deadline:
        for msg in consumer.consume(500, 0.5):
            assert msg.error() is None, msg.error()
            payloads.append(json.loads(msg.value())["payload"])
    consumer.close()
    assert payloads == lines + more
    status, groups = rest(port, "GET", "/connectors")
    assert status == 200 and sorted(groups) == ["file-sink", "file-source"]
