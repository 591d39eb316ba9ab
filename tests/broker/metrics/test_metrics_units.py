"""The metrics package without a broker: Kafka's percentiles, the families a scrape serves, the listener key, the
OTLP subset decoder against opentelemetry-proto's encoder, and ClientMetricsManager's rules."""

from __future__ import annotations

import uuid

import pytest

from broker.metrics.broker_metrics import BrokerMetrics, _percentile, kafka_api_name
from broker.metrics.client_metrics import ClientMetricsManager, SubscriptionError, validate
from broker.metrics.otlp import CUMULATIVE, DELTA, OtlpError, decode_metrics
from broker.metrics.prometheus import parse_listener
from protocol.errors import ErrorCode


def test_percentiles_are_yammers_and_names_are_kafkas() -> None:
    values = list(range(1, 101))
    assert _percentile(values, 0.5) == 50.5
    assert _percentile(values, 0.99) == 99.99
    assert _percentile(values, 0.999) == 100
    assert _percentile([], 0.5) == 0.0
    assert [kafka_api_name(k) for k in (0, 1, 18, 22, 74)] == \
        ["Produce", "Fetch", "ApiVersions", "InitProducerId", "ListConfigResources"]


def _samples(families: list, name: str) -> dict:
    return {tuple(sorted(labels.items())): value for n, _, _, samples in families if n == name
            for labels, value in samples}


def test_counts_and_the_all_topics_sums_outlive_a_deleted_topic() -> None:
    m = BrokerMetrics()
    m.record_produce("a", 10, 1000, 0)
    m.record_produce("b", 5, 500, 0)
    m.record_produce("b", 0, 700, 10)  # MESSAGE_TOO_LARGE: failed, bytes rejected
    m.record_isr_update(3, 2, True)
    m.record_isr_update(2, 3, True)
    m.record_isr_update(2, 3, False)
    m.remove_deleted_topics({"a"})
    families = m.families()
    assert _samples(families, "kafka_server_brokertopicmetrics_messagesin") == {(): 15, (("topic", "a"),): 10}
    assert _samples(families, "kafka_server_brokertopicmetrics_bytesrejected") == {(): 700, (("topic", "a"),): 0}
    assert _samples(families, "kafka_server_brokertopicmetrics_failedproducerequests")[()] == 1
    assert [_samples(families, f"kafka_server_replicamanager_{n}")[()] for n in
            ("isrshrinks", "isrexpands", "failedisrupdates")] == [1, 1, 1]


def test_a_request_timer_records_seven_parts_and_fetch_twice() -> None:
    m = BrokerMetrics()
    t = m.timer(1, 12, arrived=1_000_000, dequeued=3_000_000)
    t.complete(local_ns=1_000_000, throttle_ms=0, follower=False)
    t.completed = 10_000_000
    t.sent(11_000_000, 15_000_000)
    total = _samples(m.families(), "kafka_network_requestmetrics_totaltimems")
    assert total[(("quantile", "0.50"), ("request", "FetchConsumer"))] == 14.0
    assert total[(("__count__", ""), ("request", "Fetch"))] == 1
    queue = _samples(m.families(), "kafka_network_requestmetrics_requestqueuetimems")
    assert queue[(("quantile", "0.99"), ("request", "Fetch"))] == 2.0
    remote = _samples(m.families(), "kafka_network_requestmetrics_remotetimems")
    assert remote[(("quantile", "0.99"), ("request", "Fetch"))] == 6.0
    assert _samples(m.families(), "kafka_network_requestmetrics_requests") == {
        (("request", "Fetch"), ("version", "12")): 1, (("request", "FetchConsumer"), ("version", "12")): 1}


def test_the_listener_key() -> None:
    assert parse_listener("http://127.0.0.1:9404") == ("127.0.0.1", 9404)
    assert parse_listener("http://:9404") == ("0.0.0.0", 9404)
    assert parse_listener("http://[::1]:0") == ("::1", 0)
    assert parse_listener("127.0.0.1:9404") is None
    assert parse_listener("http://h:99999") is None


def test_the_otlp_subset_reads_what_opentelemetry_proto_writes() -> None:
    from opentelemetry.proto.common.v1 import common_pb2 as common
    from opentelemetry.proto.metrics.v1 import metrics_pb2 as otlp

    data = otlp.MetricsData()
    rm = data.resource_metrics.add()
    rm.resource.attributes.add(key="client_rack", value=common.AnyValue(string_value="r1"))
    scope = rm.scope_metrics.add()
    gauge = scope.metrics.add(name="org.apache.kafka.producer.record.queue.time.avg", unit="ms")
    point = gauge.gauge.data_points.add(as_double=1.5)
    point.attributes.add(key="node_id", value=common.AnyValue(int_value=-1))
    point.attributes.add(key="ok", value=common.AnyValue(bool_value=True))
    total = scope.metrics.add(name="org.apache.kafka.producer.connection.creation.total")
    total.sum.aggregation_temporality = DELTA
    total.sum.is_monotonic = True
    total.sum.data_points.add(as_int=7)
    scope.metrics.add(name="a.histogram").histogram.data_points.add(count=3)
    decoded = decode_metrics(data.SerializeToString())
    assert decoded.skipped == 1
    first, second = decoded.points
    assert (first.name, first.kind, first.value, first.attributes, first.resource, first.unit) == \
        ("org.apache.kafka.producer.record.queue.time.avg", "gauge", 1.5, {"node_id": "-1", "ok": "true"},
         {"client_rack": "r1"}, "ms")
    assert (second.kind, second.value, second.temporality, second.monotonic) == ("sum", 7.0, DELTA, True)
    for broken in (b"\x0a\xff", b"\x0a\x05ab", b"\x08", b"\x0b"):
        with pytest.raises(OtlpError):
            decode_metrics(broken)


def _sum_push(value: int, temporality: int) -> bytes:
    from opentelemetry.proto.metrics.v1 import metrics_pb2 as otlp

    data = otlp.MetricsData()
    metric = data.resource_metrics.add().scope_metrics.add().metrics.add(name="client.requests.total")
    metric.sum.aggregation_temporality = temporality
    metric.sum.is_monotonic = True
    metric.sum.data_points.add(as_int=value)
    return data.SerializeToString()


def test_client_metrics_manager_follows_kafkas_rules() -> None:
    now = [0.0]
    m = ClientMetricsManager(10_000, clock_ms=lambda: now[0])
    m.set_subscriptions({"java": {"metrics": "org.apache.kafka.producer.", "interval.ms": "1000",
                                  "match": "client_software_name=apache-kafka-java"},
                         "all": {"metrics": "*", "interval.ms": "5000", "match": "client_id=app-.*"}})
    java = {"client_id": "x", "client_software_name": "apache-kafka-java", "client_software_version": "4.4.0"}
    error, instance = m.get_subscriptions(None, java)
    assert error == ErrorCode.NONE and instance is not None
    assert (instance.metrics, instance.interval_ms) == (["org.apache.kafka.producer."], 1000)
    _, both = m.get_subscriptions(None, dict(java, client_id="app-1"))
    assert (both.metrics, both.interval_ms) == (["*"], 1000)
    _, none = m.get_subscriptions(None, {"client_id": "other"})
    assert (none.metrics, none.interval_ms) == ([], 300_000)
    assert m.get_subscriptions(instance.instance_id, java)[0] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert m.push(instance.instance_id, instance.subscription_id, False, 0, _sum_push(3, DELTA), java) == 0
    now[0] = 1000
    assert m.push(instance.instance_id, instance.subscription_id, False, 0, _sum_push(4, DELTA), java) == 0
    assert m.push(instance.instance_id, instance.subscription_id, False, 0, b"", java) == \
        ErrorCode.THROTTLING_QUOTA_EXCEEDED
    [(name, kind, _, samples)] = [f for f in m.families() if f[0] == "client_requests"]
    assert (kind, samples[0][1], samples[0][0]["client_software_version"]) == ("counter", 7.0, "4.4.0")
    now[0] = 2000
    assert m.push(instance.instance_id, instance.subscription_id, False, 0, _sum_push(10, CUMULATIVE), java) == 0
    assert [f for f in m.families() if f[0] == "client_requests"][0][3][0][1] == 10.0
    # a changed subscription set: the old subscription id is unknown, and asking again is not throttled after it
    m.update_subscription("java", {"metrics": "org.apache.kafka.", "interval.ms": "1000"})
    now[0] = 3000
    assert m.push(instance.instance_id, instance.subscription_id, False, 0, b"", java) == \
        ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    error, again = m.get_subscriptions(instance.instance_id, java)
    assert error == ErrorCode.NONE and again.subscription_id != instance.subscription_id
    assert m.push(uuid.UUID(int=1), 0, False, 0, b"", java) == ErrorCode.INVALID_REQUEST
    assert m.push(again.instance_id, again.subscription_id, True, 0, b"", java) == ErrorCode.NONE
    assert m.push(again.instance_id, again.subscription_id, False, 0, b"", java) == ErrorCode.INVALID_REQUEST
    now[0] = 10 * 60_000  # idle for max(60 s, 3 intervals): forgotten with what it pushed
    assert [f for f in m.families() if f[0] == "client_requests"] == []


@pytest.mark.parametrize("props, code, message", [
    ({"metrics": "a", "nope": "1"}, ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: nope"),
    ({"interval.ms": "99"}, ErrorCode.INVALID_REQUEST,
     "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ({"interval.ms": "x"}, ErrorCode.INVALID_CONFIG,
     "Invalid value x for configuration interval.ms: Not a number of type INT"),
    ({"match": "client_rack=a"}, ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_rack=a"),
    ({"match": "client_id=("}, ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id=("),
])
def test_subscription_validation_is_kafkas(props: dict, code: ErrorCode, message: str) -> None:
    with pytest.raises(SubscriptionError) as e:
        validate("s", props)
    assert (e.value.code, str(e.value)) == (code, message)
