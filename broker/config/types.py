"""Kafka's configuration value model: types, sources, parsing, validators and their error messages.

Contract:
- `ConfigType` and `ConfigSource` carry Kafka's wire numbering (DescribeConfigs `config_type`,
  `config_source` and synonym `source`).
- `parse_value(name, type, raw)` turns a property string into the typed value the way Kafka's
  ConfigDef does (strings trimmed, booleans case-insensitive, lists split on commas, an empty
  list for an empty string) and raises `InvalidValue` with Kafka's message shape:
  ``Invalid value <v> for configuration <name>: <reason>``.
- Validators (`at_least`, `between`, `one_of`, `list_of`, `NON_NULL`, `NON_EMPTY`, `METADATA_VERSION`)
  check a parsed value and raise `InvalidValue` with the reason Kafka gives.
- `to_string(value, type)` is the text Kafka shows for a typed value (DescribeConfigs values):
  lists joined with ",", booleans lower-case, doubles as Java prints them.
Pure: no I/O, no broker state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from broker.common.metadata_version import MetadataVersion

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308


class ConfigType(IntEnum):
    """DescribeConfigs `config_type` (Kafka's DescribeConfigsResponse.ConfigType)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs `config_source` / synonym `source` (Kafka's DescribeConfigsResponse.ConfigSource)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = (
    ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.SHORT, ConfigType.LONG, ConfigType.DOUBLE,
    ConfigType.LIST, ConfigType.CLASS, ConfigType.PASSWORD)


class ConfigError(ValueError):
    """A bad configuration key or value; the message names the key."""


class InvalidValue(ConfigError):
    """A value Kafka's ConfigDef would reject; the message is Kafka's ("Invalid value ... for configuration ...")."""

    def __init__(self, name: str, value: Any, reason: str | None = None) -> None:
        shown = "null" if value is None else java_str(value)
        super().__init__(f"Invalid value {shown} for configuration {name}" + (f": {reason}" if reason else ""))
        self.name = name


# Java's Integer/Long/Short.parseInt accept an optional sign and ASCII digits, nothing else.
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
# Java's Double.parseDouble: decimal or exponent forms, an optional d/f suffix, NaN and Infinity.
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[dDfF]?)")
_LIMITS = {INT: (-(2**31), 2**31 - 1), SHORT: (-(2**15), 2**15 - 1), LONG: (-(2**63), 2**63 - 1)}
_COMMA = re.compile(r"\s*,\s*")


def parse_value(name: str, type_: ConfigType, raw: Any) -> Any:
    """The typed value of `raw` (a property string, or an already-typed default)."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        return list(raw) if type_ == LIST else raw
    text = raw.strip()
    if type_ == BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise InvalidValue(name, raw, "Expected value to be either true or false")
    if type_ in (INT, SHORT, LONG):
        lo, hi = _LIMITS[type_]
        if not _JAVA_INTEGER.fullmatch(text) or not lo <= int(text) <= hi:
            raise InvalidValue(name, raw, f"Not a number of type {type_.name}")
        return int(text)
    if type_ == DOUBLE:
        m = _JAVA_DOUBLE.fullmatch(text)
        if not m:
            raise InvalidValue(name, raw, "Not a number of type DOUBLE")
        return float(text.rstrip("dDfF").replace("Infinity", "inf"))
    if type_ == LIST:
        return [] if not text else _COMMA.split(text)
    return text  # STRING, PASSWORD, CLASS (we cannot load Java classes: any name is accepted)


def parse_checked(name: str, type_: ConfigType, validator: Callable[[str, Any], None] | None, raw: Any) -> Any:
    """`parse_value`, then the key's validator on a present value (Kafka's ConfigDef.parseValue)."""
    value = parse_value(name, type_, raw)
    if validator is not None and value is not None:
        validator(name, value)
    return value


def java_double(d: float) -> str:
    """Java's Double.toString: plain decimal between 1e-3 and 1e7, else d.dddE<exp>."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    if 1e-3 <= abs(d) < 1e7:
        text = repr(d)
        if "e" in text:  # repr chose an exponent for a value Java prints plainly
            text = f"{d:.17f}".rstrip("0")
        return text if "." in text else text + ".0"
    # The shortest round-tripping digits (repr) placed as d.ddd, then Java's E notation.
    exp = int(f"{d:e}".split("e")[1])
    digits = repr(abs(d)).split("e")[0].replace(".", "").lstrip("0") or "0"
    sign = "-" if d < 0 else ""
    first, rest = digits[0], digits[1:].rstrip("0") or "0"
    return f"{sign}{first}.{rest}E{exp}"


def java_str(value: Any) -> str:
    """How Java's String.valueOf shows a parsed config value inside a message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def to_string(value: Any, type_: ConfigType | None) -> str | None:
    """Kafka's ConfigDef.convertToString: the text DescribeConfigs shows for a typed value."""
    if value is None:
        return None
    if type_ == LIST or isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    return str(value)


# --- validators ---------------------------------------------------------------------------------

Validator = Callable[[str, Any], None]


def _number(n: float) -> str:
    return java_double(n) if isinstance(n, float) else str(n)


def at_least(minimum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise InvalidValue(name, value, f"Value must be at least {_number(minimum)}")

    check.__doc__ = f"[{_number(minimum)},...]"
    return check


def between(minimum: float, maximum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise InvalidValue(name, value, f"Value must be at least {_number(minimum)}")
        if value > maximum:
            raise InvalidValue(name, value, f"Value must be no more than {_number(maximum)}")

    check.__doc__ = f"[{_number(minimum)},...,{_number(maximum)}]"
    return check


def one_of(*allowed: str) -> Validator:
    def check(name: str, value: Any) -> None:
        if value not in allowed:
            raise InvalidValue(name, value, "String must be one of: " + ", ".join(allowed))

    check.__doc__ = "[" + ", ".join(allowed) + "]"
    return check


def list_of(*allowed: str) -> Validator:
    """Every element of a list must be one of `allowed` (an empty list is fine, as in Kafka 3.7)."""

    def check(name: str, value: Any) -> None:
        for item in value:
            if item not in allowed:
                raise InvalidValue(name, item, "String must be one of: " + ", ".join(allowed))

    check.__doc__ = "[" + ", ".join(allowed) + "]"
    return check


def NON_NULL(name: str, value: Any) -> None:  # noqa: N802 - a constant-like validator, as Kafka names it
    if value is None:
        raise InvalidValue(name, "null", "entry must be non null")


def NON_EMPTY(name: str, value: Any) -> None:  # noqa: N802
    if value is not None and not str(value).strip():
        raise InvalidValue(name, value, "String must be non-empty")


def METADATA_VERSION(name: str, value: Any) -> None:  # noqa: N802
    """inter.broker.protocol.version / log.message.format.version: a version Kafka knows ("3.7", "3.7-IV4")."""
    try:
        MetadataVersion.parse(str(value))
    except ValueError as e:
        raise InvalidValue(name, value, str(e)) from None


def GZIP_LEVEL(name: str, value: Any) -> None:  # noqa: N802
    if value != -1 and not 1 <= value <= 9:
        raise InvalidValue(name, value, "Value must be between 1 and 9, or -1 for the default level")
