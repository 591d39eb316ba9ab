"""Client quotas: Kafka's precedence and throttle arithmetic, quotas beside SCRAM credentials in one user's
node, and confluent-kafka producers and consumers held to their byte rates over real sockets (throttle_time_ms
in the answers, the connection muted), set and changed at run time through AlterClientQuotas."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from broker.security.quotas import DEFAULT, QuotaManager
from broker.testing import EmbeddedBroker
from protocol import ApiKey, encode_request, request_class
from tests.broker.wire import recv, roundtrip
from tests.e2e.support import wait_until
from tests.security.support import add_scram_user

QUOTA = 100_000  # bytes/s
VALUE = b"x" * 1000


# ---- the model ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("configured", "expected"), [
    ({("alice", "app"): 1, ("alice", DEFAULT): 2, ("alice", None): 3, (DEFAULT, "app"): 4}, (1, ("alice", "app"))),
    ({("alice", DEFAULT): 2, ("alice", None): 3, (DEFAULT, "app"): 4}, (2, ("alice", "app"))),
    ({("alice", None): 3, (DEFAULT, "app"): 4, (None, "app"): 7}, (3, ("alice", ""))),
    ({(DEFAULT, "app"): 4, (DEFAULT, DEFAULT): 5, (None, "app"): 7}, (4, ("alice", "app"))),
    ({(DEFAULT, DEFAULT): 5, (DEFAULT, None): 6}, (5, ("alice", "app"))),
    ({(DEFAULT, None): 6, (None, "app"): 7}, (6, ("alice", ""))),
    ({(None, "app"): 7, (None, DEFAULT): 8, ("bob", None): 3}, (7, ("", "app"))),
    ({(None, DEFAULT): 8}, (8, ("", "app"))),
    ({("bob", None): 3}, None),
])
def test_kafkas_eight_levels_of_precedence(configured: dict, expected: Any) -> None:
    manager = QuotaManager(11, 1)
    manager.replace({entity: {"producer_byte_rate": float(v)} for entity, v in configured.items()})
    found = manager.quota_for("producer_byte_rate", "alice", "app")
    assert (None if found is None else (int(found[0]), found[1])) == expected


def test_throttle_time_is_the_excess_over_the_quota_times_the_window() -> None:
    manager = QuotaManager(2, 1)  # windows of 1 s, two of them: a rate over at least 1 s
    manager.replace({(None, "app"): {"producer_byte_rate": 1000.0}})
    assert manager.record("producer_byte_rate", "u", "app", 900, now_ms=10_000) == 0
    # 3,000 bytes over the 1 s minimum window: 3x the quota, so throttle (3000-1000)/1000 x 1 s
    assert manager.record("producer_byte_rate", "u", "app", 2100, now_ms=10_100) == 2000
    assert manager.record("producer_byte_rate", "other-user", "app", 0, now_ms=10_100) == 2000  # client-level: shared
    assert manager.record("producer_byte_rate", "u", "other-app", 10**6, now_ms=10_100) == 0  # no quota for it


# ---- over real sockets -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    b = EmbeddedBroker({"quota.window.num": "2", "quota.window.size.seconds": "1"},
                       data_dir=Path(tmp_path_factory.mktemp("quotas"))).start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})  # kept: its futures die with it
        admin.create_topics([NewTopic("quota-topic", 1, 1)])["quota-topic"].result(30)
        yield b
    finally:
        b.stop()


def alter_quotas(broker: EmbeddedBroker, entity: list[tuple[str, str | None]], **quotas: float | None) -> None:
    import socket

    Req = request_class(ApiKey.ALTER_CLIENT_QUOTAS)
    E = Req.EntryData
    ops = [E.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in quotas.items()]
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        response = roundtrip(s, Req[1](entries=[E(entity=[E.EntityData(entity_type=t, entity_name=n)
                                                          for t, n in entity], ops=ops)], validate_only=False), 1)
    assert [e.error_code for e in response.entries] == [0], response
    # every broker applies the store's change notification; wait for ours
    want = {k: float(v) for k, v in quotas.items() if v is not None}
    key = tuple(dict(entity).get(t, None) for t in ("user", "client-id"))
    key = tuple(DEFAULT if (t in dict(entity) and n is None) else n for t, n in zip(("user", "client-id"), key,
                                                                                        strict=True))
    wait_until(lambda: {k: v for k, v in broker.server.quotas.quotas.get(key, {}).items() if k in quotas} == want,
               10, "the quota change to apply")


def test_a_producer_is_held_to_its_byte_rate(broker: EmbeddedBroker) -> None:
    alter_quotas(broker, [("client-id", "slow-writer")], producer_byte_rate=QUOTA)
    throttles: list[Any] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "slow-writer", "linger.ms": 5,
                         "batch.size": 16384, "throttle_cb": throttles.append})
    n = 500  # 500 KB: 5 s at the quota
    start = time.monotonic()
    for _ in range(n):
        producer.produce("quota-topic", VALUE)
        producer.poll(0)
    assert producer.flush(60) == 0
    elapsed = time.monotonic() - start
    assert throttles and max(t.throttle_time for t in throttles) > 0
    # Held near the quota: a producer without one writes 500 KB in well under a second here.
    assert n * len(VALUE) / elapsed < 3 * QUOTA, elapsed


def test_a_consumer_is_held_to_its_byte_rate(broker: EmbeddedBroker) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "fast-writer"})
    for _ in range(400):
        producer.produce("quota-topic", VALUE)
    assert producer.flush(30) == 0
    # the default user (ANONYMOUS on this PLAINTEXT listener falls under it) with this client id
    alter_quotas(broker, [("user", None), ("client-id", "slow-reader")], consumer_byte_rate=QUOTA)
    throttles: list[Any] = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "slow-reader", "group.id": "slow",
                         "auto.offset.reset": "earliest", "throttle_cb": throttles.append,
                         "max.partition.fetch.bytes": 65536})
    consumer.subscribe(["quota-topic"])
    got = 0
    start = time.monotonic()
    try:
        while got < 400 and time.monotonic() - start < 60:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
    finally:
        consumer.close()
    elapsed = time.monotonic() - start
    assert got >= 400
    assert throttles and max(t.throttle_time for t in throttles) > 0
    assert got * len(VALUE) / elapsed < 3 * QUOTA, elapsed


def test_removing_a_quota_applies_at_once(broker: EmbeddedBroker) -> None:
    alter_quotas(broker, [("client-id", "brief")], producer_byte_rate=1000)
    alter_quotas(broker, [("client-id", "brief")], producer_byte_rate=None)
    assert broker.server.quotas.quota_for("producer_byte_rate", "ANONYMOUS", "brief") is None


def test_quotas_and_scram_credentials_share_a_users_node(broker: EmbeddedBroker) -> None:
    add_scram_user(broker.bootstrap, "shared-user", "secret-1")
    alter_quotas(broker, [("user", "shared-user")], producer_byte_rate=5000)
    add_scram_user(broker.bootstrap, "shared-user", "secret-2")  # a SCRAM write keeps the quota
    store = broker.server.controller.store._tree
    node = store.get("/config/users/shared-user")[0]
    assert b'"producer_byte_rate":"5000"' in node.replace(b" ", b"") and b"SCRAM-SHA-256" in node
    alter_quotas(broker, [("user", "shared-user")], producer_byte_rate=6000)  # a quota write keeps the credential
    node = store.get("/config/users/shared-user")[0]
    assert b'"producer_byte_rate":"6000"' in node.replace(b" ", b"") and b"SCRAM-SHA-256" in node


def test_a_client_over_its_request_percentage_is_throttled(broker: EmbeddedBroker) -> None:
    import socket

    # 0.01% of one thread: a handful of Metadata requests use more than that in a second.
    alter_quotas(broker, [("client-id", "busy")], request_percentage=0.01)
    Metadata = request_class(ApiKey.METADATA)
    throttles = []
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        for i in range(50):
            request = Metadata[9](topics=None, allow_auto_topic_creation=False)
            request.with_header(correlation_id=i, client_id="busy")
            frame = encode_request(request)
            s.sendall(struct.pack(">i", len(frame)) + frame)
            throttles.append(recv(s, ApiKey.METADATA, 9).throttle_time_ms)
            if throttles[-1] > 0:
                break
    assert throttles[-1] > 0, throttles  # answered with a throttle, and the connection was muted for it
    # another client id on the same broker is not throttled
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        assert roundtrip(s, Metadata[9](topics=None, allow_auto_topic_creation=False), 1).throttle_time_ms == 0
    alter_quotas(broker, [("client-id", "busy")], request_percentage=None)


def test_timed_steps_counts_the_steps_not_the_waits_and_passes_errors_through() -> None:
    import asyncio
    from types import SimpleNamespace

    from broker.apis.base import timed_steps

    async def handler() -> str:
        sum(range(200_000))  # a step that uses the loop
        await asyncio.sleep(0.3)  # a wait that does not
        return "answer"

    async def failing() -> None:
        await asyncio.sleep(0)
        raise ValueError("the handler's own error")

    async def run() -> None:
        ctx = SimpleNamespace(handler_ns=0)
        assert await timed_steps(handler(), ctx) == "answer"
        assert 0 < ctx.handler_ns < 0.25e9
        with pytest.raises(ValueError, match="own error"):
            await timed_steps(failing(), ctx)
        task = asyncio.ensure_future(timed_steps(asyncio.sleep(10), ctx))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())


def test_controller_mutations_are_rate_limited_strictly_from_v6(broker: EmbeddedBroker) -> None:
    import socket

    # 1 partition a second, a burst of 2 (two 1 s windows): a 3-partition topic goes into debt.
    alter_quotas(broker, [("client-id", "mutator")], controller_mutation_rate=1.0)
    Create = request_class(ApiKey.CREATE_TOPICS)
    T = Create.CreatableTopic

    def create(version: int, name: str) -> Any:
        request = Create[version](topics=[T(name=name, num_partitions=3, replication_factor=1, assignments=[],
                                            configs=[])], timeout_ms=30000, validate_only=False)
        request.with_header(correlation_id=1, client_id="mutator")
        frame = encode_request(request)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
            s.sendall(struct.pack(">i", len(frame)) + frame)
            return recv(s, ApiKey.CREATE_TOPICS, version)

    first = create(7, "mutations-1")
    assert first.topics[0].error_code == 0 and first.throttle_time_ms == 0
    refused = create(7, "mutations-2")  # the bucket is empty: strict from v6
    assert refused.topics[0].error_code == 89  # THROTTLING_QUOTA_EXCEEDED
    assert refused.topics[0].error_message == "The throttling quota has been exceeded."
    assert refused.throttle_time_ms > 0
    permissive = create(5, "mutations-3")  # below v6: created, only throttled
    assert permissive.topics[0].error_code == 0 and permissive.throttle_time_ms > 0
    alter_quotas(broker, [("client-id", "mutator")], controller_mutation_rate=None)
