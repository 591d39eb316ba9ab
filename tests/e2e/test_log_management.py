"""The broker's own housekeeping as consumers see it: log compaction (retention: test_retention.py).

- Compaction: a `cleanup.policy=compact` topic with small segments gets many updates per key and some
  tombstones; the cleaner runs, and a consumer from the beginning reads fewer records than were written,
  in offset order, with the latest value of every key (tombstones included, as delete.retention.ms has
  not passed) and every key's latest offset intact.
"""

from __future__ import annotations

from typing import Any

from kafka import KafkaProducer

from tests.e2e.log_support import HOUSEKEEPING, create_topic, read_all
from tests.e2e.support import wait_until


def test_compaction_keeps_the_latest_value_per_key(broker_factory: Any) -> None:
    broker = broker_factory(HOUSEKEEPING)
    create_topic(broker.bootstrap, "compacted", {"cleanup.policy": "compact", "segment.bytes": "4096",
                                                 "min.cleanable.dirty.ratio": "0.01"})
    latest: dict[bytes, bytes | None] = {}
    latest_offset: dict[bytes, int] = {}
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=0,
                             compression_type="zstd")
    written = 0
    try:
        for round_ in range(20):
            futures = []
            for k in range(30):
                key = b"key-%02d" % k
                value: bytes | None = b"%s-v%02d" % (key, round_) + b"." * 40
                if round_ == 19 and k % 10 == 0:
                    value = None  # tombstone
                futures.append((key, value, producer.send("compacted", key=key, value=value, partition=0)))
            for key, value, f in futures:
                md = f.get(10)
                latest[key] = value
                latest_offset[key] = md.offset
                written += 1
        # A few more so the last round is not in the active segment the cleaner must skip.
        for i in range(60):
            producer.send("compacted", key=b"filler-%02d" % (i % 3), value=b"f" * 60, partition=0).get(10)
            written += 1
    finally:
        producer.close(5)
    for i in range(57, 60):
        latest[b"filler-%02d" % (i % 3)] = b"f" * 60

    def compacted() -> bool:
        return len(read_all(broker.bootstrap, "compacted")) < written // 2

    wait_until(compacted, 20, "the cleaner to compact the log", interval=0.5)
    records = read_all(broker.bootstrap, "compacted")
    offsets = [r.offset for r in records]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    seen: dict[bytes, bytes | None] = {}
    for r in records:
        seen[r.key] = r.value
    assert seen == latest
    by_offset = {r.offset: r for r in records}
    for key, off in latest_offset.items():
        assert off in by_offset and by_offset[off].key == key, \
            f"latest record of {key!r} at {off} was removed"
