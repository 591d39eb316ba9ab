"""kcat (Debian's binary, librdkafka 2.0) against the broker: `-L` lists the broker and the topic's
partitions; `-P` produces 2,000 lines per codec (10,000 over the five codecs) with keys, headers (`-H`) and
null values (`-Z`) through librdkafka's default partitioner; `-C -e -J` reads everything back, exactly once
and in send order per partition. Legacy librdkafka (no ApiVersions, message format v0/v1) round trips too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from tests.e2e.support import CODECS, Msg, assert_order_kept, stored_codecs

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="the kcat binary is not installed")

PARTITIONS = 4
PER_CODEC = 2000


def kcat(*args: str, stdin: bytes | None = None, timeout: float = 30) -> bytes:
    proc = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=timeout)
    assert proc.returncode == 0, \
        f"kcat {' '.join(args)} exited {proc.returncode}: {proc.stderr.decode()[-2000:]}"
    return proc.stdout


def text_messages(n: int, tag: str) -> list[Msg]:
    headers = (("codec", tag.encode()), ("client", b"kcat"))
    out = []
    for i in range(n):
        value = None if i % 10 == 3 else (f"{tag} value {i} " * (1 + i % 5)).encode()
        out.append(Msg(-1, f"{tag}-key-{i}".encode(), value, headers))
    return out


def test_metadata_lists_broker_and_topic(broker: Any) -> None:
    kcat("-b", broker.bootstrap, "-P", "-t", "kcat-meta", "-p", "0", stdin=b"hello\n")
    meta = json.loads(kcat("-b", broker.bootstrap, "-L", "-J", "-t", "kcat-meta"))
    assert [(b["id"], b["name"]) for b in meta["brokers"]] == [(broker.server.broker_id, broker.bootstrap)]
    [topic] = meta["topics"]
    assert topic["topic"] == "kcat-meta"
    assert "error" not in topic
    assert len(topic["partitions"]) >= 1
    for p in topic["partitions"]:
        assert p["leader"] == broker.server.broker_id
        assert p["replicas"] == [{"id": broker.server.broker_id}]
        assert p["isrs"] == [{"id": broker.server.broker_id}]


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_round_trip(broker: Any, codec: str) -> None:
    topic = f"kcat-{codec}"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)], operation_timeout=10).values():
        f.result(15)

    sent = text_messages(PER_CODEC, codec)
    lines = b"".join(m.key + b"\t" + (m.value or b"") + b"\n" for m in sent)
    kcat("-b", broker.bootstrap, "-P", "-t", topic, "-K", "\t", "-Z", "-z", codec,
         "-H", f"codec={codec}", "-H", "client=kcat", "-X", "linger.ms=5", stdin=lines)
    # Stored as produced, never recompressed; librdkafka sends a batch uncompressed when compressing it would not
    # make it smaller (a lone small record, as a loaded machine's linger may give), so "none" may appear too.
    stored = stored_codecs(broker.data_dir, topic)
    assert codec in stored and stored <= {codec, "none"}, stored

    out = kcat("-b", broker.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q")
    received = []
    for line in out.splitlines():
        env = json.loads(line)
        assert env["topic"] == topic
        # kcat 1.7 prints headers as a flat [name, value, name, value, ...] list.
        flat = env.get("headers", [])
        headers = tuple((flat[i], flat[i + 1].encode()) for i in range(0, len(flat), 2))
        value = None if env["payload"] is None else env["payload"].encode()
        received.append(Msg(env["partition"], env["key"].encode(), value, headers))
    assert_order_kept(sent, received)
    assert {m.partition for m in received} == set(range(PARTITIONS))


@pytest.mark.parametrize(("fallback", "codec"),
                         [("0.9.0", "snappy"), ("0.10.0.0", "gzip"), ("0.10.0.0", "none")])
def test_legacy_protocol_clients(broker: Any, fallback: str, codec: str) -> None:
    """librdkafka without ApiVersions (`broker.version.fallback`): 0.9 speaks Produce/Fetch v0-v1 with
    message format v0, 0.10.0 with v1. What they write, they and modern clients read back."""
    topic = f"legacy-{fallback.replace('.', '')}-{codec}"
    legacy = ["-X", "api.version.request=false", "-X", f"broker.version.fallback={fallback}"]
    lines = b"".join(b"k%d\tv%d\n" % (i, i) for i in range(100))
    kcat("-b", broker.bootstrap, "-P", "-t", topic, "-p", "0", "-K", "\t", "-z", codec, *legacy, stdin=lines)
    for extra in ([], legacy):
        out = kcat("-b", broker.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-q", *extra)
        envelopes = [json.loads(line) for line in out.splitlines()]
        got = [(e["partition"], e["offset"], e["key"], e["payload"]) for e in envelopes]
        assert got == [(0, i, f"k{i}", f"v{i}") for i in range(100)]
