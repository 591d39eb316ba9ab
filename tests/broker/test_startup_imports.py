"""What `python -m broker` loads before it serves (issue 7: start-up ≤ 0.3 s to the first ApiVersions; issue 35:
what a listener or feature needs is imported only when it is configured or first used).

Each check runs in a fresh interpreter, because the test process itself has long imported everything.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from bench.wire import free_port, wait_for_api_versions

# What a default start (one PLAINTEXT listener, ZooKeeper mode on the embedded store, no ACLs, no TLS, no SASL)
# must not import before or while answering its first ApiVersions: each was loaded at start once, and together
# they tripled the start-up time (0.157 s on 2026-11-23, ~0.5 s on 2026-11-27).
NOT_AT_DEFAULT_START = (
    "cryptography",  # PKCS12/JKS key stores (broker/security/key_stores.py)
    "re2",  # KIP-848 regex subscriptions (broker/coordinator/group/topic_regex.py)
    "importlib.metadata",  # crc32c's __init__ looking its version up (broker/lazy_packages.py)
    "kafka.protocol.consumer",  # kafka-python's consumer messages, only for its own clients
    "kafka.protocol.admin",
    "kafka.protocol.sasl",
    "protocol.inter_broker_messages",
    "protocol.metadata_records",  # KRaft's record schemas
    "broker.kraft.image",
    "broker.kraft.lifecycle",
    "broker.kraft.broker_server",
    "broker.raft",
    "broker.security.authorizer",  # ACLs (authorizer.class.name)
    "broker.security.acl_store",
    "broker.share.manager",  # share-partition leaders, on the first ShareFetch
    "broker.share.rpc_persister",  # their Persister, with them
    "broker.coordinator.share.service",  # the share coordinator, on first use or __share_group_state leadership
    "broker.coordinator.group.service",  # the group coordinator, on first use or __consumer_offsets leadership
    "broker.coordinator.group.coordinator",
    "broker.apis.produce",  # every handler but ApiVersions loads on its API's first request
    "broker.apis.fetch",
    "broker.apis.metadata",
    "broker.apis.create_topics",
    "broker.apis.share_fetch",
    "broker.apis.describe_acls",
)


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_broker_start_up_imports_neither_the_kafka_python_client_nor_unused_message_classes() -> None:
    out = _run(
        """
        import sys
        import broker.__main__, broker.kafka_server
        loaded = [m for m in ("kafka.admin", "kafka.consumer.group", "kafka.producer", "kafka.protocol.admin",
                              "kafka.protocol.sasl", "protocol.inter_broker_messages", "construct")
                  if m in sys.modules]
        print("loaded:", loaded)
        """
    )
    assert out.strip() == "loaded: []"


def test_the_kafka_stand_in_turns_into_the_whole_package_on_first_use() -> None:
    out = _run(
        """
        from broker import lazy_packages
        lazy_packages.install("kafka")
        import kafka.protocol.metadata
        import sys
        assert "kafka.admin" not in sys.modules
        from kafka import KafkaConsumer, KafkaProducer
        import kafka
        print(KafkaConsumer.__name__, KafkaProducer.__name__, bool(kafka.__version__), "kafka.admin" in sys.modules)
        """
    )
    assert out.split() == ["KafkaConsumer", "KafkaProducer", "True", "True"]


def test_message_classes_load_on_first_use_and_by_name() -> None:
    out = _run(
        """
        import sys
        from protocol import ApiKey, decode_request, encode_request, request_class
        assert "protocol.inter_broker_messages" not in sys.modules
        from protocol.messages import LeaderAndIsrRequest
        assert request_class(ApiKey.LEADER_AND_ISR) is LeaderAndIsrRequest
        req = request_class(ApiKey.CREATE_TOPICS)[7](topics=[], timeout_ms=5, validate_only=False)
        req.with_header(correlation_id=3, client_id="t")
        back = decode_request(encode_request(req))
        print(type(back).__name__, back.header.correlation_id)
        try:
            from protocol.messages import NoSuchRequest  # noqa: F401
        except ImportError:
            print("ImportError")
        """
    )
    assert out.split() == ["CreateTopicsRequest", "3", "ImportError"]


def test_a_default_start_imports_no_unconfigured_feature(tmp_path: Path) -> None:
    """A real `python -m broker` start up to its first ApiVersions answer: the modules it holds by then. (Not from
    `-X importtime`, which does not see what importlib.import_module loads: the handlers and message classes.)"""
    port = free_port()
    dump = tmp_path / "modules.txt"
    # runpy as `python -m broker` does, with a SIGUSR1 handler that writes sys.modules out.
    code = textwrap.dedent(f"""
        import os, runpy, signal, sys
        def dump(*_):
            with open({str(dump)!r} + ".tmp", "w") as f:
                f.write("\\n".join(sorted(sys.modules)))
            os.replace({str(dump)!r} + ".tmp", {str(dump)!r})  # whole or not at all
        signal.signal(signal.SIGUSR1, dump)
        sys.argv = ["broker", "--override", "listeners=PLAINTEXT://127.0.0.1:{port}",
                    "--override", "log.dirs={tmp_path / 'logs'}"]
        runpy.run_module("broker", run_name="__main__", alter_sys=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_api_versions("127.0.0.1", port, time.monotonic() + 60)
        time.sleep(0.3)  # what the start's last tasks import after the first answer counts too
        proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while not dump.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)  # not SIGTERM: what shutdown imports is not start-up's
        proc.wait(10)
    loaded = set(dump.read_text().split())
    assert {"broker.kafka_server", "broker.apis.api_versions"} <= loaded
    assert sorted(loaded & set(NOT_AT_DEFAULT_START)) == []


def test_the_group_and_share_coordinators_start_on_first_use(tmp_path: Path) -> None:
    """Not at start (above); then the first caller starts each, on the broker's loop even when it asks from another
    thread, and later callers get the same one."""
    from broker.testing import EmbeddedBroker

    b = EmbeddedBroker(data_dir=tmp_path / "b", port=free_port()).start()
    try:
        server = b.server
        assert server._group_coordinator is None and server._share_coordinator is None
        groups, shares = server.group_coordinator, server.share_coordinator  # from this (the test's) thread
        assert server.group_coordinator is groups and server.share_coordinator is shares
        deadline = time.monotonic() + 10
        while len(shares._timers) < 2 and time.monotonic() < deadline:  # its prune and snapshot timers, on the loop
            time.sleep(0.05)
        assert len(shares._timers) == 2
        assert groups.runtime.on_leadership_change in server.replica_manager.on_leadership_change
    finally:
        b.stop()
