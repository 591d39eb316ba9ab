"""The request handlers, one module per Kafka API (see `broker.apis.base` for the module contract).

`HANDLERS` maps API key -> handler module; `advertised_versions()` is what ApiVersions answers, derived
from the modules themselves so the table never claims an API nobody implemented.
"""

from __future__ import annotations

from types import ModuleType

from broker.apis import (
    alter_configs,
    api_versions,
    controlled_shutdown,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_handshake,
    stop_replica,
    sync_group,
    update_metadata,
)

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
    create_partitions,
    delete_groups,
    incremental_alter_configs,
    offset_delete,
    describe_cluster,
]

HANDLERS: dict[int, ModuleType] = {m.API_KEY: m for m in HANDLER_MODULES}


def advertised_versions() -> dict[int, tuple[int, int]]:
    return {key: (m.MIN_VERSION, m.MAX_VERSION) for key, m in sorted(HANDLERS.items())}
