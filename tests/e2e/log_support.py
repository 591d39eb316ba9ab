"""Helpers for the log-housekeeping tests (kafka-python): broker overrides that make retention and the
cleaner run often, `create_topic(bootstrap, topic, configs)` (one partition), `read_all(bootstrap, topic)`
(partition 0 from its start up to the end offset seen at the start) and `beginning_offset(bootstrap, topic)`.
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import NewTopic

HOUSEKEEPING = {"log.cleaner.backoff.ms": "100", "log.retention.check.interval.ms": "200",
                "log.segment.delete.delay.ms": "0"}


def create_topic(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=configs)])
    finally:
        admin.close()


def read_all(bootstrap: str, topic: str, timeout: float = 20) -> list[Any]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100)
    tp = TopicPartition(topic, 0)
    out: list[Any] = []
    try:
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        deadline = time.monotonic() + timeout
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out.extend(records)
    finally:
        consumer.close()
    return out


def beginning_offset(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        return consumer.beginning_offsets([tp])[tp]
    finally:
        consumer.close()
