"""The transaction coordinator's settings: Kafka's broker properties for transactions.

Contract: immutable; field names are Kafka's property names with dots as underscores, defaults are Kafka's.
The broker builds one from its config (service.py); tests build their own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    transactional_id_expiration_ms: int = 7 * 24 * 3600 * 1000
    transaction_max_timeout_ms: int = 15 * 60 * 1000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    request_timeout_ms: int = 30_000
    # The largest batch of tombstones written at once when idle transactional ids expire (message.max.bytes).
    max_batch_bytes: int = 1024 * 1024
