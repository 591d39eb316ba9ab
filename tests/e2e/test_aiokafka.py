"""aiokafka against the broker: AIOKafkaAdminClient creates the topic, an idempotent AIOKafkaProducer sends
2,000 messages per codec (10,000 over the five codecs) with keys, headers and null values; an
AIOKafkaConsumer in a group reads them back exactly and in order per partition and commits.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.e2e.support import CODECS, Msg, assert_same_per_partition, make_messages, stored_codecs

PARTITIONS = 4
PER_CODEC = 2000


async def round_trip(bootstrap: str, topic: str, codec: str, sent: list[Msg]) -> list[Msg]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5, enable_idempotence=True,
                                compression_type=None if codec == "none" else codec)
    await producer.start()
    try:
        futures = [await producer.send(topic, key=m.key, value=m.value, headers=list(m.headers),
                                       partition=m.partition) for m in sent]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), 30)
    finally:
        await producer.stop()
    next_offset = [0] * PARTITIONS
    for m, md in zip(sent, metadata, strict=True):
        assert (md.partition, md.offset) == (m.partition, next_offset[m.partition])
        next_offset[m.partition] += 1

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"g-{topic}",
                                auto_offset_reset="earliest", enable_auto_commit=False, fetch_max_wait_ms=100)
    await consumer.start()
    received: list[Msg] = []
    try:
        async def drain() -> None:
            while len(received) < len(sent):
                batches = await consumer.getmany(timeout_ms=500)
                for tp, records in batches.items():
                    received.extend(Msg(tp.partition, r.key, r.value, tuple(r.headers)) for r in records)

        await asyncio.wait_for(drain(), 30)
        await consumer.commit()
        for p in range(PARTITIONS):
            assert await consumer.committed(TopicPartition(topic, p)) == next_offset[p]
    finally:
        await consumer.stop()
    return received


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_group(broker: Any, codec: str) -> None:
    topic = f"aio-{codec}"
    sent = make_messages(PER_CODEC, PARTITIONS, topic)
    received = asyncio.run(round_trip(broker.bootstrap, topic, codec, sent))
    assert_same_per_partition(sent, received)
    assert stored_codecs(broker.data_dir, topic) == {codec}
