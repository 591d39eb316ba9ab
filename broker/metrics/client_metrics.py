"""KIP-714 client telemetry, as Kafka's ClientMetricsManager: `client-metrics` subscriptions, the client instances
that ask for them, and the metrics they push, kept for the Prometheus endpoint.

Contract (Kafka 4.4's ClientMetricsManager, ClientMetricsConfigs and ClientMetricsInstance):
- A subscription is a `client-metrics` config resource (ConfigResource type 16) with `metrics` (a list of metric
  name prefixes; "*" or an empty string: all), `interval.ms` (100..3600000, default 300000) and `match` (a list of
  `param=regex`, param one of client_instance_id, client_id, client_software_name, client_software_version,
  client_source_address, client_source_port; every pattern must match the whole value; none: every client).
  `validate(name, props)` raises `SubscriptionError` with Kafka's code and message (INVALID_REQUEST for an empty
  name, an unknown key or an interval out of range, INVALID_CONFIG for a bad value or pattern).
  `set_subscriptions({name: props})` replaces them all (loaded from the store, or KRaft's ConfigRecords).
- `get_subscriptions(instance_id, client)`: a zero id gets a new random one. The instance's subscription is
  re-evaluated whenever the subscriptions changed since it was made: the requested metrics of every matching
  subscription ("*" alone if any asks for all), the smallest push interval, and a subscription id (CRC32C of both,
  xor the instance id's hash). Asked again before its push interval has passed: THROTTLING_QUOTA_EXCEEDED, unless
  its last push failed with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE.
- `push(...)`, checked in Kafka's order: a zero or reserved instance id or a push after a terminating one:
  INVALID_REQUEST; before the push interval (and not terminating; the first push after a GetTelemetrySubscriptions
  is always taken, clients jitter their interval): THROTTLING_QUOTA_EXCEEDED; another subscription id:
  UNKNOWN_SUBSCRIPTION_ID; a compression type that is not Kafka's: UNSUPPORTED_COMPRESSION_TYPE; more than
  `telemetry.max.bytes`: TELEMETRY_TOO_LARGE; metrics that do not decompress or decode (OTLP, otlp.py):
  INVALID_RECORD.
- What a push carries is kept per instance, gauges as their last value, sums as counters (a delta added, a
  cumulative value taken), at most `MAX_SERIES` series per instance, and served by `families()` with the client's
  labels (client_instance_id, client_id, client_software_name, client_software_version) and each data point's
  attributes: `org.apache.kafka.producer.node.request.latency.avg` -> `org_apache_kafka_producer_node_request_
  latency_avg`, a monotonic sum with `_total`. An instance not heard from for max(60 s, 3 push intervals) is
  forgotten with its series, and at most 16,384 instances are kept (the longest idle goes), as Kafka's cache.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from crc32c import crc32c

from broker.metrics.broker_metrics import Family
from broker.metrics.otlp import CUMULATIVE, decode_metrics
from protocol.errors import ErrorCode

log = logging.getLogger(__name__)

CLIENT_METRICS = 16  # ConfigResource.Type
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
ALL_METRICS = "*"
MATCH_PARAMS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
                "client_source_address", "client_source_port")
# Kafka's order: zstd, lz4, gzip, snappy
ACCEPTED_COMPRESSION_TYPES = [4, 3, 1, 2]
_KNOWN_COMPRESSION = frozenset({0, 1, 2, 3, 4})
MAX_INSTANCES = 16_384
MAX_SERIES = 5_000
_MIN_EXPIRY_MS = 60_000
_RESERVED_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})  # Kafka's Uuid.RESERVED: ZERO and METADATA_TOPIC
_NAME = re.compile(r"[^a-zA-Z0-9_:]")
_LABEL = re.compile(r"[^a-zA-Z0-9_]")


class SubscriptionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Subscription:
    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: tuple[tuple[str, re.Pattern[str]], ...]

    def matches(self, client: Mapping[str, str | None]) -> bool:
        for param, pattern in self.match:
            value = client.get(param)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def _list(value: str) -> list[str]:
    """Kafka's ConfigDef LIST: comma-separated, trimmed; an empty string is an empty list."""
    return [] if not value.strip() else [item.strip() for item in value.split(",")]


def validate(name: str, props: Mapping[str, str]) -> Subscription:
    """Kafka's ClientMetricsConfigs.validate, then the subscription the configs make."""
    if not name:
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in props:
        if key not in (METRICS, INTERVAL_MS, MATCH):
            raise SubscriptionError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    interval = DEFAULT_INTERVAL_MS
    if INTERVAL_MS in props:
        try:
            interval = int(props[INTERVAL_MS].strip())
        except ValueError:
            raise SubscriptionError(ErrorCode.INVALID_CONFIG, f"Invalid value {props[INTERVAL_MS]} for configuration "
                                                              f"{INTERVAL_MS}: Not a number of type INT") from None
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise SubscriptionError(ErrorCode.INVALID_REQUEST, f"Invalid value {interval} for {INTERVAL_MS}, interval "
                                                               "must be between 100 and 3600000 (1 hour)")
    match = []
    for pattern in _list(props.get(MATCH, "")):
        parts = pattern.split("=")
        param = parts[0].strip()
        if len(parts) != 2 or param not in MATCH_PARAMS:
            raise SubscriptionError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        try:
            match.append((param, re.compile(parts[1].strip())))
        except re.error:
            raise SubscriptionError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}") from None
    return Subscription(name, tuple(_list(props.get(METRICS, ""))), interval, tuple(match))


def _java_uuid_hash(value: uuid.UUID) -> int:
    bits = (value.int >> 64) ^ (value.int & (1 << 64) - 1)
    return ((bits >> 32) ^ bits) & 0xFFFFFFFF


@dataclass
class ClientInstance:
    instance_id: uuid.UUID
    client: dict[str, str | None]  # the match parameters' values
    subscription_id: int
    version: int  # the subscriptions' version it was made from
    metrics: list[str]
    interval_ms: int
    last_get_ms: float = float("-inf")  # never: the first request is never throttled
    last_push_ms: float = float("-inf")
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE
    last_seen_ms: float = 0.0
    # (exposed name, sorted labels) -> [kind "gauge" | "counter", value, help]
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]] = field(default_factory=dict)


class ClientMetricsManager:
    def __init__(self, telemetry_max_bytes: int, clock_ms: Callable[[], float] | None = None) -> None:
        self.telemetry_max_bytes = telemetry_max_bytes
        self.clock_ms = clock_ms or (lambda: time.monotonic() * 1000)
        self.subscriptions: dict[str, Subscription] = {}
        self.version = 0
        self.instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self.receiving = True  # False: no receiver (the Prometheus endpoint is off); the handlers answer as Kafka

    # ---------------------------------------------------------------- subscriptions
    def set_subscriptions(self, configs: Mapping[str, Mapping[str, str]]) -> None:
        subscriptions = {}
        for name, props in configs.items():
            if not props:
                continue
            try:
                subscriptions[name] = validate(name, props)
            except SubscriptionError as e:
                log.warning("client-metrics %s: ignoring stored configs %s: %s", name, dict(props), e)
        if subscriptions != self.subscriptions:
            self.subscriptions = subscriptions
            self.version += 1

    def update_subscription(self, name: str, props: Mapping[str, str]) -> None:
        configs = {n: self._props(s) for n, s in self.subscriptions.items()}
        configs[name] = dict(props)
        self.set_subscriptions(configs)

    @staticmethod
    def _props(s: Subscription) -> dict[str, str]:
        return {METRICS: ",".join(s.metrics), INTERVAL_MS: str(s.interval_ms),
                MATCH: ",".join(f"{p}={r.pattern}" for p, r in s.match)}

    # ---------------------------------------------------------------- instances
    def _instance(self, instance_id: uuid.UUID, client: dict[str, str | None], now: float) -> ClientInstance:
        instance = self.instances.get(instance_id)
        if instance is None or instance.version != self.version:
            client = dict(client, client_instance_id=str(instance_id))
            made = self._make(instance_id, client)
            if instance is not None:  # re-evaluated: keeps what it pushed and when
                made.last_get_ms, made.last_push_ms = instance.last_get_ms, instance.last_push_ms
                made.terminating, made.last_error, made.series = instance.terminating, instance.last_error, \
                    instance.series
            instance = self.instances[instance_id] = made
        instance.last_seen_ms = now
        self.instances.move_to_end(instance_id)
        while len(self.instances) > MAX_INSTANCES:
            self.instances.popitem(last=False)
        return instance

    def _make(self, instance_id: uuid.UUID, client: dict[str, str | None]) -> ClientInstance:
        interval = DEFAULT_INTERVAL_MS
        metrics: set[str] = set()
        everything = False
        for s in self.subscriptions.values():
            if s.matches(client):
                everything = everything or ALL_METRICS in s.metrics
                metrics.update(s.metrics)
                interval = min(interval, s.interval_ms)
        requested = [ALL_METRICS] if everything else sorted(metrics)
        digest = crc32c(("[" + ", ".join(requested) + "]" + str(interval)).encode())
        subscription_id = (digest ^ _java_uuid_hash(instance_id)) & 0xFFFFFFFF
        if subscription_id >= 1 << 31:
            subscription_id -= 1 << 32
        return ClientInstance(instance_id, client, subscription_id, self.version, requested, interval)

    def expire(self) -> None:
        now = self.clock_ms()
        for instance_id in [i for i, inst in self.instances.items()
                            if now - inst.last_seen_ms > max(_MIN_EXPIRY_MS, 3 * inst.interval_ms)]:
            del self.instances[instance_id]

    # ---------------------------------------------------------------- the two requests
    def get_subscriptions(self, instance_id: uuid.UUID | None, client: dict[str, str | None]
                          ) -> tuple[ErrorCode, ClientInstance | None]:
        now = self.clock_ms()
        if instance_id is None or instance_id == uuid.UUID(int=0):
            instance_id = uuid.uuid4()
            while instance_id in self.instances:
                instance_id = uuid.uuid4()
        instance = self._instance(instance_id, client, now)
        if now - max(instance.last_get_ms, instance.last_push_ms) >= instance.interval_ms:
            instance.last_get_ms = now
        elif instance.last_error not in (ErrorCode.UNKNOWN_SUBSCRIPTION_ID, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE):
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED, None
        instance.last_error = ErrorCode.NONE
        return ErrorCode.NONE, instance

    def push(self, instance_id: uuid.UUID | None, subscription_id: int, terminating: bool, compression_type: int,
             metrics: bytes | memoryview | None, client: dict[str, str | None]) -> ErrorCode:
        if instance_id is None or instance_id in _RESERVED_IDS:
            return ErrorCode.INVALID_REQUEST
        now = self.clock_ms()
        instance = self._instance(instance_id, client, now)
        error = self._check_push(instance, subscription_id, terminating, compression_type, metrics, now)
        instance.terminating = instance.terminating or terminating
        if error == ErrorCode.NONE and metrics:
            error = self._receive(instance, compression_type, metrics)
        instance.last_error = error
        return error

    def _check_push(self, instance: ClientInstance, subscription_id: int, terminating: bool, compression_type: int,
                    metrics: bytes | memoryview | None, now: float) -> ErrorCode:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        accepted = instance.last_get_ms > instance.last_push_ms or now - instance.last_push_ms >= instance.interval_ms
        if accepted:
            instance.last_push_ms = now
        elif not terminating:
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if subscription_id != instance.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if compression_type not in _KNOWN_COMPRESSION:
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if metrics is not None and len(metrics) > self.telemetry_max_bytes:
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    def _receive(self, instance: ClientInstance, compression_type: int, metrics: bytes | memoryview) -> ErrorCode:
        from records.compression import Compression, decompress

        try:
            data = decompress(Compression(compression_type), metrics, max_size=16 * self.telemetry_max_bytes)
            decoded = decode_metrics(data)
        except ValueError as e:  # OtlpError, and the codecs' CorruptRecordError and InvalidRecordError
            log.info("client instance %s: pushed metrics that cannot be read: %s", instance.instance_id, e)
            return ErrorCode.INVALID_RECORD
        identity = {"client_instance_id": str(instance.instance_id)}
        for param in ("client_id", "client_software_name", "client_software_version"):
            identity[param] = instance.client.get(param) or ""
        series = instance.series
        for point in decoded.points:
            name = _NAME.sub("_", point.name)
            counter = point.kind == "sum" and point.monotonic
            if counter and name.endswith("_total"):
                name = name[:-6]  # served as name_total, once
            labels = {_LABEL.sub("_", k): v for k, v in point.attributes.items()}
            labels.update(identity)
            key = (name, tuple(sorted(labels.items())))
            entry = series.get(key)
            if entry is None:
                if len(series) >= MAX_SERIES:
                    continue
                kind = "counter" if counter else "gauge"
                entry = series[key] = [kind, 0.0, point.description]
            if entry[0] == "counter" and point.temporality != CUMULATIVE:
                entry[1] += point.value
            else:
                entry[1] = point.value
        return ErrorCode.NONE

    # ---------------------------------------------------------------- reading (scrape time)
    def families(self) -> list[Family]:
        self.expire()
        by_name: dict[str, tuple[str, str, list[tuple[dict[str, str], float]]]] = {}
        for instance in self.instances.values():
            for (name, labels), (kind, value, help_) in instance.series.items():
                family = by_name.get(name)
                if family is None:
                    family = by_name[name] = (kind, help_ or f"pushed by clients (KIP-714): {name}", [])
                elif family[0] != kind:
                    continue  # one name, two kinds from different clients: the first one seen is served
                family[2].append((dict(labels), value))
        out: list[Family] = [("kafka_server_client_metrics_instance_count", "gauge",
                              "Kafka's client-metrics instance-count", [({}, float(len(self.instances)))])]
        out.extend((name, kind, help_, samples) for name, (kind, help_, samples) in sorted(by_name.items()))
        return out
