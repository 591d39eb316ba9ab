"""The share coordinator's settings: Kafka 4.x's `share.coordinator.*` broker properties.

Contract: immutable; field names are Kafka's property names without the `share.coordinator.` prefix, dots as
underscores; defaults are Kafka's. The broker builds one from its config (service.py); tests build their own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ShareCoordinatorConfig:
    state_topic_num_partitions: int = 50
    state_topic_replication_factor: int = 3
    state_topic_min_isr: int = 2
    state_topic_segment_bytes: int = 100 * 1024 * 1024
    # ShareUpdate records written between two ShareSnapshot records of a share partition (0..500).
    snapshot_update_records_per_snapshot: int = 500
    write_timeout_ms: int = 5000
    state_topic_prune_interval_ms: int = 5 * 60 * 1000
    cold_partition_snapshot_interval_ms: int = 5 * 60 * 1000
