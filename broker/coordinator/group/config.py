"""The group coordinator's settings: Kafka's broker properties for groups.

Contract: immutable; field names are Kafka's property names with dots as underscores, defaults are
Kafka's. The broker builds one from its config (service.py); tests build their own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    offsets_topic_num_partitions: int = 50
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = 2147483647
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600000
    # Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: how long a new member may wait in its first join.
    new_member_join_timeout_ms: int = 300000
    # KIP-848 consumer groups (Kafka's group.consumer.* properties); the first assignor is the default.
    consumer_group_session_timeout_ms: int = 45000
    consumer_group_heartbeat_interval_ms: int = 5000
    consumer_group_max_size: int = 2147483647
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    # group.consumer.migration.policy: disabled, upgrade, downgrade or bidirectional (Kafka 4.0's default).
    consumer_group_migration_policy: str = "bidirectional"
