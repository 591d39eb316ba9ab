"""The request handlers, one module per Kafka API (see `broker.apis.base` for the module contract).

`HANDLERS` maps API key -> handler module and is the broker's only table of what it serves:
`advertised_versions()` (what ApiVersions answers) and request dispatch both read it, so the broker never
claims an API or version nobody implemented. `register` builds it and refuses, at import, a second module
for the same API key and a version range the codec (`protocol.SUPPORTED_VERSIONS`) cannot decode and
encode.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from broker.apis import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    allocate_producer_ids,
    alter_client_quotas,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_share_group_offsets,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_share_group_offsets,
    delete_share_group_state,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_share_group_offsets,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    get_telemetry_subscriptions,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    initialize_share_group_state,
    join_group,
    leader_and_isr,
    leave_group,
    list_config_resources,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    push_telemetry,
    read_share_group_state,
    read_share_group_state_summary,
    sasl_authenticate,
    sasl_handshake,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_share_group_state,
    write_txn_markers,
)
from protocol import SUPPORTED_VERSIONS
from protocol.api_keys import api_name

HANDLER_MODULES: list[ModuleType] = [
    produce,
    fetch,
    list_offsets,
    metadata,
    leader_and_isr,
    stop_replica,
    update_metadata,
    controlled_shutdown,
    offset_commit,
    offset_fetch,
    find_coordinator,
    join_group,
    heartbeat,
    leave_group,
    sync_group,
    describe_groups,
    list_groups,
    sasl_handshake,
    api_versions,
    create_topics,
    delete_topics,
    delete_records,
    init_producer_id,
    offset_for_leader_epoch,
    describe_configs,
    alter_configs,
    alter_replica_log_dirs,
    describe_log_dirs,
    create_partitions,
    delete_groups,
    incremental_alter_configs,
    alter_partition_reassignments,
    list_partition_reassignments,
    offset_delete,
    describe_cluster,
    describe_acls,
    create_acls,
    delete_acls,
    describe_topic_partitions,
    describe_quorum,
    # --- controller protocol (issue 14) ---
    allocate_producer_ids,
    alter_partition,
    elect_leaders,
    add_partitions_to_txn,
    add_offsets_to_txn,
    end_txn,
    write_txn_markers,
    describe_transactions,
    list_transactions,
    txn_offset_commit,
    describe_producers,
    sasl_authenticate,
    describe_user_scram_credentials,
    alter_user_scram_credentials,
    describe_client_quotas,
    alter_client_quotas,
    # --- KIP-848 consumer groups (issue 19) ---
    consumer_group_heartbeat,
    consumer_group_describe,
    # --- share-group state, broker to share coordinator (issue 19, KIP-932) ---
    initialize_share_group_state,
    read_share_group_state,
    write_share_group_state,
    delete_share_group_state,
    read_share_group_state_summary,
    # --- KIP-932 share groups (issue 19) ---
    share_group_heartbeat,
    share_group_describe,
    share_fetch,
    share_acknowledge,
    describe_share_group_offsets,
    alter_share_group_offsets,
    delete_share_group_offsets,
    # --- KIP-714 client telemetry (issue 33) ---
    get_telemetry_subscriptions,
    push_telemetry,
    list_config_resources,
]


class HandlerRegistrationError(Exception):
    """Two handler modules for one API key, or a handler range the codec cannot decode and encode."""


def register(modules: Iterable[ModuleType]) -> dict[int, ModuleType]:
    """API key -> handler module, refusing duplicates and ranges outside the codec's table."""
    handlers: dict[int, ModuleType] = {}
    for module in modules:
        key, low, high = module.API_KEY, module.MIN_VERSION, module.MAX_VERSION
        other = handlers.get(key)
        if other is not None:
            raise HandlerRegistrationError(
                f"{api_name(key)} is served by both {other.__name__} and {module.__name__}")
        codec = SUPPORTED_VERSIONS.get(key)
        if codec is None or not codec[0] <= low <= high <= codec[1]:
            codec_range = "nothing" if codec is None else f"v{codec[0]}-v{codec[1]}"
            raise HandlerRegistrationError(f"{module.__name__} serves {api_name(key)} v{low}-v{high}, outside "
                                           f"what the codec decodes and encodes ({codec_range})")
        handlers[key] = module
    return handlers


HANDLERS: dict[int, ModuleType] = register(HANDLER_MODULES)


def advertised_versions() -> dict[int, tuple[int, int]]:
    return {key: (m.MIN_VERSION, m.MAX_VERSION) for key, m in sorted(HANDLERS.items())}
