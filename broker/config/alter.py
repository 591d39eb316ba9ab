"""Altering one resource's configs, the part every resource type shares (Kafka's ConfigAdminManager: the checks of
AlterConfigs and IncrementalAlterConfigs entries and prepareIncrementalConfigs).

- `check_entries`: a key named twice is INVALID_REQUEST "Error due to duplicate config keys"; a null value
  (other than for DELETE) INVALID_REQUEST "Null value not supported for : a, b"; an unknown operation
  INVALID_REQUEST "Unknown operations type N".
- `apply_operations`: SET, DELETE, APPEND and SUBTRACT applied to a resource's current values; APPEND and
  SUBTRACT only on LIST keys, starting from the key's default (`topic_list_default`, `broker_list_default`).
- Failures are `AdminError`s carrying the (error code, message) the resource is answered.

Used by broker/controller/config_admin.py (TOPIC and BROKER resources) and group_configs.py (GROUP).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from broker.config.keys import BROKER_KEYS, TOPIC_KEYS
from broker.config.types import LIST, to_string
from protocol.errors import ErrorCode

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

Result = tuple[ErrorCode, str | None]
OK: Result = (ErrorCode.NONE, None)


class AdminError(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.result: Result = (code, message)


def check_entries(configs: Sequence[Any], incremental: bool) -> None:
    """Duplicate keys and null values, checked before anything else."""
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise AdminError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [c.name for c in configs if c.value is None and not (incremental and c.config_operation == DELETE)]
    if nulls:
        raise AdminError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
    if incremental:
        for c in configs:
            if c.config_operation not in (SET, DELETE, APPEND, SUBTRACT):
                raise AdminError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {c.config_operation}")


def apply_operations(configs: Sequence[Any], current: Mapping[str, str],
                     list_default: Callable[[str], str | None]) -> dict[str, str]:
    """Kafka's prepareIncrementalConfigs. `list_default(name)` is the key's default as text if it is a
    LIST key, None if it is another type; unknown keys raise KeyError."""
    props = dict(current)
    for c in configs:
        op = c.config_operation
        if op == SET:
            props[c.name] = c.value
        elif op == DELETE:
            props.pop(c.name, None)
        else:
            try:
                default = list_default(c.name)
            except KeyError:
                raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, None) from None
            if default is None:
                verb = "append" if op == APPEND else "subtract"
                raise AdminError(ErrorCode.INVALID_CONFIG,
                                 f"Config value {verb} is not allowed for config key: {c.name}")
            old_text = props.get(c.name, default)
            given = c.value.split(",")
            if op == APPEND:
                old = old_text.split(",") if old_text else []
                props[c.name] = ",".join(old + [v for v in given if v not in old])
            else:
                remaining = old_text.split(",")
                for v in given:  # a multiset difference, as Scala's diff
                    if v in remaining:
                        remaining.remove(v)
                props[c.name] = ",".join(remaining)
    return props


def topic_list_default(name: str) -> str | None:
    key = TOPIC_KEYS[name]
    return (to_string(key.default, LIST) or "") if key.type == LIST else None


def broker_list_default(name: str) -> str | None:
    key = BROKER_KEYS.get(name)
    if key is None or key.dynamic_only:
        raise KeyError(name)
    return (to_string(key.default, LIST) or "") if key.type == LIST else None
