"""What `python -m broker` loads before it serves (issue 7: start-up ≤ 0.3 s to the first ApiVersions).

Each check runs in a fresh interpreter, because the test process itself has long imported everything.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


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
