"""Record the request frames stock clients send, for the fuzz corpus: `python -m fuzz.record [client ...]`.

A broker of ours runs in-process behind a recording proxy that it advertises as its address, so every connection
a client opens goes through the proxy. Each client (kafka-python, confluent-kafka / librdkafka, aiokafka, kcat)
runs a session a user would: admin requests (topics, partitions, configs, ACLs, quotas, SCRAM users, groups,
records), an idempotent and a transactional producer, a consumer group that commits. The proxy keeps up to three
distinct frames per (client, API, version), at most 64 KiB each, and writes them to
tests/fixtures/frames/fuzz/<client>/<api>_v<N>_<i>.bin (the directory is replaced). Steps a client or the broker
refuses are fine: the request frame was recorded all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker.testing import EmbeddedBroker, free_port
from fuzz.corpus import FRAMES_DIR
from protocol import ApiKey

OUT = FRAMES_DIR / "fuzz"
_KEEP_PER_API = 3
_MAX_FRAME = 64 * 1024


class RecordingProxy:
    """Forwards connections on `port` to the broker at `target`, keeping the client's frames by client name."""

    def __init__(self, port: int, target: int) -> None:
        self.port, self.target = port, target
        self.client = "none"
        self.frames: dict[str, dict[tuple[int, int], list[bytes]]] = {}
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def start(self) -> RecordingProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", self.port), self.loop).result(10)
        return self

    def stop(self) -> None:
        assert self._server is not None
        self.loop.call_soon_threadsafe(self._server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    def _keep(self, frame: bytes) -> None:
        if len(frame) < 8 or len(frame) > _MAX_FRAME:
            return
        key, version = struct.unpack_from(">hh", frame, 0)
        kept = self.frames.setdefault(self.client, {}).setdefault((key, version), [])
        if len(kept) < _KEEP_PER_API and all(frame[8:] != k[8:] for k in kept):  # not by correlation id alone
            kept.append(frame)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return

        async def upstream() -> None:
            while True:
                prefix = await reader.readexactly(4)
                (size,) = struct.unpack(">i", prefix)
                frame = await reader.readexactly(size)
                self._keep(frame)
                up_writer.write(prefix + frame)
                await up_writer.drain()

        async def downstream() -> None:
            while data := await up_reader.read(65536):
                writer.write(data)
                await writer.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        with contextlib.suppress(Exception):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        writer.close()
        up_writer.close()


def _step(what: str, fn: Callable[[], Any]) -> None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - a refused step still sent its frames
        print(f"  {what}: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr)


# ---------------------------------------------------------------- the clients' sessions

def kafka_python(bootstrap: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ConfigResource,
        ConfigResourceType,
        NewPartitions,
        NewTopic,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )
    from kafka.structs import OffsetAndMetadata

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-kafka-python", request_timeout_ms=5000)
    topic = ResourcePattern(ResourceType.TOPIC, "kp-topic", ACLResourcePatternType.LITERAL)
    acl = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, topic)
    acl_filter = ACLFilter("User:alice", "*", ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(ResourceType.TOPIC, "kp-topic", ACLResourcePatternType.LITERAL))
    _step("create_topics", lambda: admin.create_topics([NewTopic("kp-topic", 2, 1, topic_configs={
        "retention.ms": "600000"})]))
    _step("create_partitions", lambda: admin.create_partitions({"kp-topic": NewPartitions(3)}))
    _step("describe_configs", lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-topic"),
                                                              ConfigResource(ConfigResourceType.BROKER, "0")]))
    _step("alter_configs", lambda: admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-topic",
                                                                       configs={"retention.ms": "700000"})]))
    _step("create_acls", lambda: admin.create_acls([acl]))
    _step("describe_acls", lambda: admin.describe_acls(acl_filter))
    _step("delete_acls", lambda: admin.delete_acls([acl_filter]))
    _step("describe_cluster", admin.describe_cluster)
    _step("list_topics", admin.list_topics)
    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="fuzz-kafka-python", enable_idempotence=True,
                             acks="all")
    _step("produce", lambda: [f.get(10) for f in [producer.send("kp-topic", key=b"k%d" % i, value=b"v" * 20,
                                                                headers=[("h", b"1")]) for i in range(5)]])
    producer.close(5)
    txn = KafkaProducer(bootstrap_servers=bootstrap, client_id="fuzz-kafka-python-txn",
                        transactional_id="kp-txn", acks="all")

    def transaction() -> None:
        txn.init_transactions()
        txn.begin_transaction()
        txn.send("kp-topic", b"in-txn").get(10)
        txn.commit_transaction()

    _step("transaction", transaction)
    txn.close(5)
    consumer = KafkaConsumer("kp-topic", bootstrap_servers=bootstrap, client_id="fuzz-kafka-python",
                             group_id="kp-group", auto_offset_reset="earliest", enable_auto_commit=False)

    def consume() -> None:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and not consumer.poll(timeout_ms=500):
            pass
        consumer.commit()

    _step("consume", consume)
    consumer.close()
    tp = TopicPartition("kp-topic", 0)
    _step("list_groups", lambda: admin.list_groups())
    _step("describe_groups", lambda: admin.describe_groups(["kp-group"]))
    _step("list_group_offsets", lambda: admin.list_group_offsets({"kp-group": None}))
    _step("alter_group_offsets", lambda: admin.alter_group_offsets("kp-group", {tp: OffsetAndMetadata(1, "", -1)}))
    _step("delete_group_offsets", lambda: admin.delete_group_offsets("kp-group", [tp]))
    _step("delete_groups", lambda: admin.delete_groups(["kp-group"]))
    _step("delete_records", lambda: admin.delete_records({tp: 1}))
    _step("describe_producers", lambda: admin.describe_producers([tp]))
    _step("describe_transactions", lambda: admin.describe_transactions(["kp-txn"]))
    _step("list_transactions", lambda: admin.list_transactions())
    _step("describe_topic_partitions", lambda: admin.describe_topic_partitions(["kp-topic"]))
    _step("list_partition_reassignments", lambda: admin.list_partition_reassignments())
    _step("describe_user_scram_credentials", lambda: admin.describe_user_scram_credentials())
    _step("describe_log_dirs", lambda: admin.describe_log_dirs())
    _step("client quotas", lambda: _client_quotas(admin))
    _step("delete_topics", lambda: admin.delete_topics(["kp-topic"]))
    admin.close()


def _client_quotas(admin: Any) -> None:
    """kafka-python's admin has no quota calls: the requests kafka-configs.sh sends, through its controller path."""
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

    entity = [AlterClientQuotasRequest.EntryData.EntityData(entity_type="user", entity_name="alice")]
    op = AlterClientQuotasRequest.EntryData.OpData(key="producer_byte_rate", value=1048576.0, remove=False)
    admin._manager.run(admin._send_request_to_controller, AlterClientQuotasRequest[1](
        entries=[AlterClientQuotasRequest.EntryData(entity=entity, ops=[op])], validate_only=False))
    component = DescribeClientQuotasRequest.ComponentData(entity_type="user", match_type=0, match="alice")
    admin._manager.run(admin._send_request_to_controller, DescribeClientQuotasRequest[1](components=[component],
                                                                                        strict=False))


def confluent(bootstrap: str) -> None:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        OffsetSpec,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    conf = {"bootstrap.servers": bootstrap, "client.id": "fuzz-librdkafka"}
    admin = AdminClient(conf)

    def wait(futures: Any) -> None:
        items = futures.values() if isinstance(futures, dict) else [futures]
        for f in items:
            with contextlib.suppress(Exception):
                f.result(10)

    binding = AclBinding(ResourceType.TOPIC, "ck-topic", ResourcePatternType.LITERAL, "User:bob", "*",
                         AclOperation.WRITE, AclPermissionType.ALLOW)
    binding_filter = AclBindingFilter(ResourceType.TOPIC, "ck-topic", ResourcePatternType.LITERAL, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
    topic_res = ConfigResource("topic", "ck-topic")
    _step("create_topics", lambda: wait(admin.create_topics([NewTopic("ck-topic", 2, 1,
                                                                      config={"cleanup.policy": "delete"})])))
    _step("create_partitions", lambda: wait(admin.create_partitions([NewPartitions("ck-topic", 4)])))
    _step("describe_configs", lambda: wait(admin.describe_configs([topic_res, ConfigResource("broker", "0")])))
    _step("incremental_alter_configs", lambda: wait(admin.incremental_alter_configs([ConfigResource(
        "topic", "ck-topic", incremental_configs=[ConfigEntry("retention.ms", "800000",
                                                              incremental_operation=AlterConfigOpType.SET)])])))
    _step("create_acls", lambda: wait(admin.create_acls([binding])))
    _step("describe_acls", lambda: wait(admin.describe_acls(binding_filter)))
    _step("delete_acls", lambda: wait(admin.delete_acls([binding_filter])))
    _step("describe_cluster", lambda: wait(admin.describe_cluster()))
    _step("describe_topics", lambda: wait(admin.describe_topics(
        __import__("confluent_kafka").TopicCollection(["ck-topic"]))))
    _step("alter_user_scram_credentials", lambda: wait(admin.alter_user_scram_credentials([
        UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                     b"secret")])))
    _step("describe_user_scram_credentials", lambda: wait(admin.describe_user_scram_credentials(["carol"])))
    producer = Producer({**conf, "enable.idempotence": True, "linger.ms": 5})
    for i in range(5):
        producer.produce("ck-topic", key=b"k%d" % i, value=b"v" * 30, headers=[("h", b"1")])
    producer.flush(10)
    txn = Producer({**conf, "transactional.id": "ck-txn"})

    def transaction() -> None:
        txn.init_transactions(10)
        txn.begin_transaction()
        txn.produce("ck-topic", value=b"in-txn")
        txn.commit_transaction(10)

    _step("transaction", transaction)
    consumer = Consumer({**conf, "group.id": "ck-group", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe(["ck-topic"])

    def consume() -> None:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                consumer.commit(asynchronous=False)
                break

    _step("consume", consume)
    consumer.close()
    _step("list_offsets", lambda: wait(admin.list_offsets({TopicPartition("ck-topic", 0): OffsetSpec.latest()})))
    _step("delete_records", lambda: wait(admin.delete_records([TopicPartition("ck-topic", 0, 1)])))
    _step("list_consumer_groups", lambda: wait(admin.list_consumer_groups()))
    _step("describe_consumer_groups", lambda: wait(admin.describe_consumer_groups(["ck-group"])))
    _step("list_consumer_group_offsets", lambda: wait(admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("ck-group")])))
    _step("alter_consumer_group_offsets", lambda: wait(admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("ck-group", [TopicPartition("ck-topic", 0, 1)])])))
    _step("delete_consumer_groups", lambda: wait(admin.delete_consumer_groups(["ck-group"])))
    _step("delete_topics", lambda: wait(admin.delete_topics(["ck-topic"])))


def aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def session() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="fuzz-aiokafka")
        await admin.start()
        try:
            with contextlib.suppress(Exception):
                await admin.create_topics([NewTopic("ak-topic", 1, 1)])
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="fuzz-aiokafka",
                                        enable_idempotence=True)
            await producer.start()
            try:
                for i in range(3):
                    await producer.send_and_wait("ak-topic", key=b"k%d" % i, value=b"aiokafka")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer("ak-topic", bootstrap_servers=bootstrap, client_id="fuzz-aiokafka",
                                        group_id="ak-group", auto_offset_reset="earliest", enable_auto_commit=False)
            await consumer.start()
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(8):
                        await consumer.getone()
                await consumer.commit()
            finally:
                await consumer.stop()
            with contextlib.suppress(Exception):
                await admin.describe_configs([])
            with contextlib.suppress(Exception):
                await admin.delete_topics(["ak-topic"])
        finally:
            await admin.close()

    asyncio.run(session())


def kcat_path() -> str:
    """kcat's executable (Debian's kcat, or its old name kafkacat)."""
    exe = shutil.which("kcat") or shutil.which("kafkacat")
    if exe is None:
        raise FileNotFoundError("kcat is not installed")
    return exe


def kcat(bootstrap: str) -> None:
    base = [kcat_path(), "-b", bootstrap, "-X", "client.id=fuzz-kcat"]
    subprocess.run(base + ["-P", "-t", "kc-topic", "-K:"], input=b"k1:v1\nk2:v2\n", timeout=20, capture_output=True)
    subprocess.run(base + ["-L"], timeout=20, capture_output=True)
    subprocess.run(base + ["-C", "-t", "kc-topic", "-o", "beginning", "-e"], timeout=20, capture_output=True)
    subprocess.run(base + ["-G", "kc-group", "kc-topic", "-o", "beginning", "-e"], timeout=30, capture_output=True)


CLIENTS: dict[str, Callable[[str], None]] = {
    "kafka-python": kafka_python, "confluent-kafka": confluent, "aiokafka": aiokafka, "kcat": kcat,
}


def record(clients: list[str]) -> dict[str, dict[tuple[int, int], list[bytes]]]:
    proxy_port = free_port()
    broker = EmbeddedBroker({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                             "auto.create.topics.enable": "true", "group.initial.rebalance.delay.ms": "0"})
    broker.start()
    proxy = RecordingProxy(proxy_port, broker.port).start()
    try:
        for client in clients:
            proxy.client = client
            print(f"recording {client}", file=sys.stderr)
            _step(client, lambda c=client: CLIENTS[c](f"127.0.0.1:{proxy_port}"))
            time.sleep(0.2)
    finally:
        proxy.stop()
        broker.stop()
        broker.cleanup()
    return proxy.frames


def write(frames: dict[str, dict[tuple[int, int], list[bytes]]], out: Path = OUT) -> None:
    for client, by_api in frames.items():
        directory = out / client
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        for (key, version), kept in sorted(by_api.items()):
            try:
                name = ApiKey(key).name.lower()
            except ValueError:
                name = f"api{key}"
            for i, frame in enumerate(kept):
                (directory / f"{name}_v{version}_{i}.bin").write_bytes(frame)
        print(client, len(by_api), "(api, version)s,", sum(map(len, by_api.values())), "frames")


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    write(record(sys.argv[1:] or list(CLIENTS)))
