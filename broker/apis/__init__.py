"""The request handlers, one module per Kafka API (see `broker.apis.base` for the module contract).

`SERVED` maps API key -> (handler module, lowest and highest version) and is the broker's only table of what it
serves: `advertised_versions()` (what ApiVersions answers) and request dispatch both read it, so the broker never
claims an API or version nobody implemented. A handler module is imported on the first request of its API
(`handler(api_key)`), not at start: together the handlers import every feature of the broker (the ZooKeeper-mode
controller's admin paths, KRaft forwarding, ACLs, share groups, ...), most of which a given broker never uses, and
importing them all made start-up three times slower (issue 35). Each module states its own `API_KEY`,
`MIN_VERSION` and `MAX_VERSION` as before; it is checked against its row when it loads (and by
tests/broker/test_api_versions.py for every module), and `register` refuses, at import, a second row for one API
key and a version range the codec (`protocol.SUPPORTED_VERSIONS`) cannot decode and encode.

`HANDLERS` (API key -> module) and `HANDLER_MODULES` import every handler; they are for tests and tools, and
`broker.apis.<name>` imports that one handler module on first use, as an ordinary submodule.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from types import ModuleType
from typing import Any, NamedTuple

from protocol import SUPPORTED_VERSIONS
from protocol.api_keys import ApiKey, api_name


class Served(NamedTuple):
    module: str  # the handler module's name in broker.apis
    min_version: int
    max_version: int


# In the order the APIs were added (the order ApiVersions used to list them does not matter: it sorts by key).
_TABLE: dict[int, tuple[str, int, int]] = {
    ApiKey.PRODUCE: ("produce", 0, 12),
    ApiKey.FETCH: ("fetch", 0, 18),
    ApiKey.LIST_OFFSETS: ("list_offsets", 0, 11),
    ApiKey.METADATA: ("metadata", 0, 12),
    ApiKey.LEADER_AND_ISR: ("leader_and_isr", 0, 7),
    ApiKey.STOP_REPLICA: ("stop_replica", 0, 4),
    ApiKey.UPDATE_METADATA: ("update_metadata", 0, 8),
    ApiKey.CONTROLLED_SHUTDOWN: ("controlled_shutdown", 0, 3),
    ApiKey.OFFSET_COMMIT: ("offset_commit", 0, 9),
    ApiKey.OFFSET_FETCH: ("offset_fetch", 0, 9),
    ApiKey.FIND_COORDINATOR: ("find_coordinator", 0, 6),
    ApiKey.JOIN_GROUP: ("join_group", 0, 9),
    ApiKey.HEARTBEAT: ("heartbeat", 0, 4),
    ApiKey.LEAVE_GROUP: ("leave_group", 0, 5),
    ApiKey.SYNC_GROUP: ("sync_group", 0, 5),
    ApiKey.DESCRIBE_GROUPS: ("describe_groups", 0, 5),
    ApiKey.LIST_GROUPS: ("list_groups", 0, 5),
    ApiKey.SASL_HANDSHAKE: ("sasl_handshake", 0, 1),
    ApiKey.API_VERSIONS: ("api_versions", 0, 5),
    ApiKey.CREATE_TOPICS: ("create_topics", 0, 7),
    ApiKey.DELETE_TOPICS: ("delete_topics", 0, 6),
    ApiKey.DELETE_RECORDS: ("delete_records", 0, 2),
    ApiKey.INIT_PRODUCER_ID: ("init_producer_id", 0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ("offset_for_leader_epoch", 0, 4),
    ApiKey.DESCRIBE_CONFIGS: ("describe_configs", 0, 4),
    ApiKey.ALTER_CONFIGS: ("alter_configs", 0, 2),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ("alter_replica_log_dirs", 0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: ("describe_log_dirs", 0, 4),
    ApiKey.CREATE_PARTITIONS: ("create_partitions", 0, 3),
    ApiKey.DELETE_GROUPS: ("delete_groups", 0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ("incremental_alter_configs", 0, 1),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ("alter_partition_reassignments", 0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ("list_partition_reassignments", 0, 0),
    ApiKey.OFFSET_DELETE: ("offset_delete", 0, 0),
    ApiKey.DESCRIBE_CLUSTER: ("describe_cluster", 0, 1),
    ApiKey.DESCRIBE_ACLS: ("describe_acls", 0, 3),
    ApiKey.CREATE_ACLS: ("create_acls", 0, 3),
    ApiKey.DELETE_ACLS: ("delete_acls", 0, 3),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: ("describe_topic_partitions", 0, 0),
    ApiKey.DESCRIBE_QUORUM: ("describe_quorum", 0, 2),
    ApiKey.ALLOCATE_PRODUCER_IDS: ("allocate_producer_ids", 0, 0),
    ApiKey.ALTER_PARTITION: ("alter_partition", 0, 3),
    ApiKey.ELECT_LEADERS: ("elect_leaders", 0, 2),
    ApiKey.ADD_PARTITIONS_TO_TXN: ("add_partitions_to_txn", 0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: ("add_offsets_to_txn", 0, 4),
    ApiKey.END_TXN: ("end_txn", 0, 5),
    ApiKey.WRITE_TXN_MARKERS: ("write_txn_markers", 0, 2),
    ApiKey.DESCRIBE_TRANSACTIONS: ("describe_transactions", 0, 0),
    ApiKey.LIST_TRANSACTIONS: ("list_transactions", 0, 1),
    ApiKey.TXN_OFFSET_COMMIT: ("txn_offset_commit", 0, 5),
    ApiKey.DESCRIBE_PRODUCERS: ("describe_producers", 0, 0),
    ApiKey.SASL_AUTHENTICATE: ("sasl_authenticate", 0, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ("describe_user_scram_credentials", 0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ("alter_user_scram_credentials", 0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ("describe_client_quotas", 0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: ("alter_client_quotas", 0, 1),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ("consumer_group_heartbeat", 0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ("consumer_group_describe", 0, 0),
    ApiKey.INITIALIZE_SHARE_GROUP_STATE: ("initialize_share_group_state", 0, 0),
    ApiKey.READ_SHARE_GROUP_STATE: ("read_share_group_state", 0, 0),
    ApiKey.WRITE_SHARE_GROUP_STATE: ("write_share_group_state", 0, 1),
    ApiKey.DELETE_SHARE_GROUP_STATE: ("delete_share_group_state", 0, 0),
    ApiKey.READ_SHARE_GROUP_STATE_SUMMARY: ("read_share_group_state_summary", 0, 1),
    ApiKey.SHARE_GROUP_HEARTBEAT: ("share_group_heartbeat", 1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: ("share_group_describe", 1, 1),
    ApiKey.SHARE_FETCH: ("share_fetch", 1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: ("share_acknowledge", 1, 2),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: ("describe_share_group_offsets", 0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: ("alter_share_group_offsets", 0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: ("delete_share_group_offsets", 0, 0),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: ("get_telemetry_subscriptions", 0, 0),
    ApiKey.PUSH_TELEMETRY: ("push_telemetry", 0, 0),
    ApiKey.LIST_CLIENT_METRICS_RESOURCES: ("list_config_resources", 0, 1),  # ListConfigResources since 4.1
}


class HandlerRegistrationError(Exception):
    """Two handler modules for one API key, a handler range the codec cannot decode and encode, or a handler module
    whose own API_KEY/MIN_VERSION/MAX_VERSION differ from its row in `SERVED`."""


def _check_codec(key: int, name: str, low: int, high: int) -> None:
    codec = SUPPORTED_VERSIONS.get(key)
    if codec is None or not codec[0] <= low <= high <= codec[1]:
        codec_range = "nothing" if codec is None else f"v{codec[0]}-v{codec[1]}"
        raise HandlerRegistrationError(f"{name} serves {api_name(key)} v{low}-v{high}, outside "
                                       f"what the codec decodes and encodes ({codec_range})")


def register(modules: Iterable[ModuleType]) -> dict[int, ModuleType]:
    """API key -> handler module, refusing duplicates and ranges outside the codec's table."""
    handlers: dict[int, ModuleType] = {}
    for module in modules:
        key, low, high = module.API_KEY, module.MIN_VERSION, module.MAX_VERSION
        other = handlers.get(key)
        if other is not None:
            raise HandlerRegistrationError(
                f"{api_name(key)} is served by both {other.__name__} and {module.__name__}")
        _check_codec(key, module.__name__, low, high)
        handlers[key] = module
    return handlers


def _served(table: dict[int, tuple[str, int, int]]) -> dict[int, Served]:
    modules: dict[str, int] = {}
    for key, (module, low, high) in table.items():
        if module in modules:
            raise HandlerRegistrationError(f"broker.apis.{module} is listed for both {api_name(modules[module])} "
                                           f"and {api_name(key)}")
        modules[module] = key
        _check_codec(key, f"broker.apis.{module}", low, high)
    return {key: Served(*row) for key, row in table.items()}


SERVED: dict[int, Served] = _served(_TABLE)
# API key -> (lowest, highest version): what dispatch checks a request against before the handler is loaded.
VERSIONS: dict[int, tuple[int, int]] = {key: (s.min_version, s.max_version) for key, s in SERVED.items()}
# API key -> handler module, filled as handlers are first used (dispatch reads it on every request).
LOADED: dict[int, ModuleType] = {}
_MODULE_NAMES = frozenset(s.module for s in SERVED.values())


def handler(api_key: int) -> ModuleType:
    """The handler module of `api_key` (one `SERVED` has), imported on first use and checked against its row."""
    module = LOADED.get(api_key)
    if module is None:
        served = SERVED[api_key]
        module = importlib.import_module(f"{__name__}.{served.module}")
        if (module.API_KEY, module.MIN_VERSION, module.MAX_VERSION) != (api_key, *served[1:]):
            raise HandlerRegistrationError(
                f"{module.__name__} serves {api_name(module.API_KEY)} v{module.MIN_VERSION}-v{module.MAX_VERSION} "
                f"but broker.apis.SERVED says {api_name(api_key)} v{served.min_version}-v{served.max_version}")
        LOADED[api_key] = module
    return module


def advertised_versions() -> dict[int, tuple[int, int]]:
    return dict(sorted(VERSIONS.items()))


def __getattr__(name: str) -> Any:
    # PEP 562: what the names below would cost at import is paid by whoever first asks for them.
    if name == "HANDLER_MODULES":
        return [handler(key) for key in SERVED]
    if name == "HANDLERS":
        return register(handler(key) for key in SERVED)
    if name in _MODULE_NAMES:
        return importlib.import_module(f"{__name__}.{name}")  # sets the attribute: asked once per module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["LOADED", "SERVED", "VERSIONS", "HandlerRegistrationError", "Served", "advertised_versions", "handler",
           "register"]
