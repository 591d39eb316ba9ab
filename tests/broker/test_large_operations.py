"""A large admin operation inside Kafka's bounds does not silence the broker (issue 30).

Creating a topic of 400 partitions takes a fraction of a second to seconds of file work on our machine (0.2-1 ms a
partition on the loop, their fsyncs in a worker thread); the controller applies it to itself in chunks, so an
ApiVersions on another connection is answered meanwhile, and deleting the topic rewrites the checkpoints once, not
once per partition.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from protocol import ApiKey, request_class

from .wire import recv, roundtrip, send

PARTITIONS = 400


def test_creating_and_deleting_hundreds_of_partitions_leaves_other_clients_answered(broker: Any) -> None:
    worst = 0.0
    done = threading.Event()

    def ping() -> None:
        nonlocal worst
        with socket.create_connection(("127.0.0.1", broker.port), timeout=60) as sock:
            for i in range(100_000):
                if done.is_set():
                    return
                started = time.monotonic()
                send(sock, request_class(ApiKey.API_VERSIONS)[3](client_software_name="t",
                                                                 client_software_version="1"), i)
                assert recv(sock, ApiKey.API_VERSIONS, 3).header.correlation_id == i
                worst = max(worst, time.monotonic() - started)
                time.sleep(0.01)

    pinger = threading.Thread(target=ping, daemon=True)
    pinger.start()
    Create = request_class(ApiKey.CREATE_TOPICS)
    Delete = request_class(ApiKey.DELETE_TOPICS)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=120) as admin:
        created = roundtrip(admin, Create[7](topics=[Create.CreatableTopic(
            name="large", num_partitions=PARTITIONS, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=120_000, validate_only=False), 1)
        assert created.topics[0].error_code == 0
        deleted = roundtrip(admin, Delete[6](topics=[Delete.DeleteTopicState(name="large")], timeout_ms=120_000), 2)
        assert deleted.responses[0].error_code == 0
    done.set()
    pinger.join(10)
    assert worst < 1.0, f"an ApiVersions waited {worst:.2f} s behind the topic's {PARTITIONS} partitions"
