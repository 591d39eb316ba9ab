"""The subset of OpenTelemetry's OTLP metrics protobuf (`opentelemetry.proto.metrics.v1.MetricsData`) that KIP-714
clients push: gauges and sums of numbers, with their attributes and their resource's attributes.

Contract:
- `decode_metrics(data)` returns the `DataPoint`s of every Gauge and Sum metric in the message, in order; a Sum
  carries its aggregation temporality (DELTA or CUMULATIVE) and whether it is monotonic. Histograms,
  exponential histograms and summaries are skipped (counted in `skipped`); so are fields this subset does not read
  (protobuf's rule: unknown fields are skipped by their wire type).
- Anything that is not a well-formed protobuf message of that shape (a truncated varint or length, a wire type
  that does not fit the field, more than `MAX_POINTS` points) raises `OtlpError` with one sentence: the caller
  answers INVALID_RECORD, as Kafka's broker does when its telemetry receiver fails.
- Attribute values become text (string, bool as true/false, int, double; arrays, key-value lists and bytes are
  skipped).
Why by hand and not with `opentelemetry-proto`: the subset is five small messages, the package (with protobuf)
costs ~25 ms to import and a dependency whose protobuf versions must agree with everyone else's, and a decoder of
our own is bounded by the bytes it is given. The tests decode what `opentelemetry-proto` encodes and compare.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

DELTA, CUMULATIVE = 1, 2  # AggregationTemporality
MAX_POINTS = 100_000
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
_double = struct.Struct("<d")
_int64 = struct.Struct("<q")


class OtlpError(ValueError):
    pass


@dataclass
class DataPoint:
    name: str
    kind: str  # "gauge" or "sum"
    value: float
    attributes: dict[str, str] = field(default_factory=dict)
    resource: dict[str, str] = field(default_factory=dict)
    temporality: int = 0  # sums: DELTA or CUMULATIVE
    monotonic: bool = False
    unit: str = ""
    description: str = ""


@dataclass
class Decoded:
    points: list[DataPoint]
    skipped: int  # metrics of a kind this subset does not read


def _fields(buf: memoryview) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) of one message: an int for VARINT, bytes-like for LEN, I64 and I32."""
    out: list[tuple[int, int, object]] = []
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise OtlpError("a field numbered 0")
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
            out.append((number, wire, value))
        elif wire == _LEN:
            length, pos = _varint(buf, pos)
            if length > end - pos:
                raise OtlpError(f"field {number}: a length of {length} bytes past the message's end")
            out.append((number, wire, buf[pos:pos + length]))
            pos += length
        elif wire in (_I64, _I32):
            size = 8 if wire == _I64 else 4
            if pos + size > end:
                raise OtlpError(f"field {number}: truncated")
            out.append((number, wire, buf[pos:pos + size]))
            pos += size
        else:
            raise OtlpError(f"field {number}: wire type {wire} is not read (groups are not used by OTLP)")
    return out


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise OtlpError("a truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _expect(number: int, wire: int, want: int, value: object, what: str) -> None:
    if wire != want:
        raise OtlpError(f"{what} (field {number}) has wire type {wire}")


def _text(value: object) -> str:
    try:
        return bytes(value).decode()  # type: ignore[call-overload]
    except UnicodeDecodeError:
        raise OtlpError("a string that is not UTF-8") from None


def _attributes(items: list[memoryview]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kv in items:
        key, value = "", None
        for number, wire, v in _fields(kv):
            if number == 1:
                _expect(number, wire, _LEN, v, "KeyValue.key")
                key = _text(v)
            elif number == 2:
                _expect(number, wire, _LEN, v, "KeyValue.value")
                value = _any_value(v)  # type: ignore[arg-type]
        if key and value is not None:
            out[key] = value
    return out


def _any_value(buf: memoryview) -> str | None:
    for number, wire, v in _fields(buf):
        if number == 1 and wire == _LEN:
            return _text(v)
        if number == 2 and wire == _VARINT:
            return "true" if v else "false"
        if number == 3 and wire == _VARINT:
            n = int(v)  # type: ignore[call-overload]
            return str(n - (1 << 64) if n >= 1 << 63 else n)
        if number == 4 and wire == _I64:
            return repr(_double.unpack(v)[0])  # type: ignore[arg-type]
    return None


def _number_point(buf: memoryview) -> tuple[float, dict[str, str]]:
    value = 0.0
    attributes: list[memoryview] = []
    for number, wire, v in _fields(buf):
        if number == 4:
            _expect(number, wire, _I64, v, "NumberDataPoint.as_double")
            value = _double.unpack(v)[0]  # type: ignore[arg-type]
        elif number == 6:
            _expect(number, wire, _I64, v, "NumberDataPoint.as_int")
            value = float(_int64.unpack(v)[0])  # type: ignore[arg-type]
        elif number == 7:
            _expect(number, wire, _LEN, v, "NumberDataPoint.attributes")
            attributes.append(v)  # type: ignore[arg-type]
    return value, _attributes(attributes)


def decode_metrics(data: bytes | memoryview) -> Decoded:
    points: list[DataPoint] = []
    skipped = 0
    for number, wire, resource_metrics in _fields(memoryview(data)):
        if number != 1:
            continue
        _expect(number, wire, _LEN, resource_metrics, "MetricsData.resource_metrics")
        resource: dict[str, str] = {}
        scopes: list[memoryview] = []
        for n2, w2, v2 in _fields(resource_metrics):  # type: ignore[arg-type]
            if n2 == 1:
                _expect(n2, w2, _LEN, v2, "ResourceMetrics.resource")
                resource = _attributes([v for n3, w3, v in _fields(v2) if n3 == 1 and w3 == _LEN])  # type: ignore
            elif n2 == 2:
                _expect(n2, w2, _LEN, v2, "ResourceMetrics.scope_metrics")
                scopes.append(v2)  # type: ignore[arg-type]
        for scope in scopes:
            for n3, w3, metric in _fields(scope):
                if n3 != 2:
                    continue
                _expect(n3, w3, _LEN, metric, "ScopeMetrics.metrics")
                skipped += _metric(metric, resource, points)  # type: ignore[arg-type]
                if len(points) > MAX_POINTS:
                    raise OtlpError(f"more than {MAX_POINTS} data points")
    return Decoded(points, skipped)


def _metric(buf: memoryview, resource: dict[str, str], points: list[DataPoint]) -> int:
    name = unit = description = ""
    data: tuple[str, memoryview] | None = None
    other = False
    for number, wire, v in _fields(buf):
        if number in (1, 2, 3):
            _expect(number, wire, _LEN, v, "Metric.name/description/unit")
            text = _text(v)
            if number == 1:
                name = text
            elif number == 2:
                description = text
            else:
                unit = text
        elif number in (5, 7):
            _expect(number, wire, _LEN, v, "Metric.gauge/sum")
            data = ("gauge" if number == 5 else "sum", v)  # type: ignore[assignment]
        elif number in (9, 10, 11):
            other = True
    if data is None:
        return 1 if other else 0
    kind, body = data
    temporality, monotonic = 0, False
    raw_points: list[memoryview] = []
    for number, wire, v in _fields(body):
        if number == 1:
            _expect(number, wire, _LEN, v, "data_points")
            raw_points.append(v)  # type: ignore[arg-type]
        elif number == 2 and kind == "sum":
            _expect(number, wire, _VARINT, v, "Sum.aggregation_temporality")
            temporality = int(v)  # type: ignore[call-overload]
        elif number == 3 and kind == "sum":
            _expect(number, wire, _VARINT, v, "Sum.is_monotonic")
            monotonic = bool(v)
    for raw in raw_points:
        value, attributes = _number_point(raw)
        points.append(DataPoint(name, kind, value, attributes, resource, temporality, monotonic, unit, description))
    return 0
