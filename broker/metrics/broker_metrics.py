"""Kafka's broker metrics, counted where Kafka counts them, kept as plain integers until a scrape reads them.

Contract:
- `BrokerMetrics` exists only while `metrics.prometheus.listener` is set (the server's `metrics` is None
  otherwise, and every hook is one `is not None` test): counting is then a few integer adds per request and per
  partition of a produce or fetch, never a call into a metrics library. A scrape turns them into Kafka's meters
  and gauges (`families()`), named as the Prometheus JMX exporter's Kafka rules name Kafka's MBeans
  (`kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=t` ->
  `kafka_server_brokertopicmetrics_messagesin_total{topic="t"}`).
- BrokerTopicMetrics (per topic and for all topics): MessagesIn, BytesIn, BytesOut (consumers), BytesRejected,
  TotalProduceRequests, FailedProduceRequests (per partition of a request, as Kafka's ReplicaManager counts),
  TotalFetchRequests, FailedFetchRequests; ReplicationBytesIn / ReplicationBytesOut (followers) for all topics.
  A deleted topic's series go (as Kafka removes its metrics) and its counts stay in the all-topics sums.
- ReplicaManager: IsrShrinks, IsrExpands, FailedIsrUpdates (counted when the ISR change is answered).
- RequestMetrics per request name (Kafka's `ApiKeys` names; Fetch also as FetchConsumer or FetchFollower):
  Requests{request,version} and the request-time histograms RequestQueueTimeMs, LocalTimeMs, RemoteTimeMs,
  ThrottleTimeMs, ResponseQueueTimeMs, ResponseSendTimeMs, TotalTimeMs, each with Kafka's percentiles (50th, 75th,
  95th, 98th, 99th, 999th as quantile="0.50" ... "0.999") over the last 1,028 requests of that name (Yammer's
  reservoir size; Kafka's decays exponentially over minutes instead) and its `_count`.
- Gauges (under-replicated partitions, log sizes, controller state, queue sizes, ...) are read from the broker
  at scrape time by `broker.metrics.broker_state`, on the event loop that owns that state.
What a request's parts mean here: queue = frame received whole -> handler called; local = the handler's own time
on the event loop; remote = waiting (purgatory, writer threads, followers, other brokers); throttle = the quota
throttle the answer carries; response queue = answer ready -> handed to its connection (it waits behind earlier
answers of that connection); send = handed to the connection -> its last byte written to the socket.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from protocol.api_keys import ApiKey

_RESERVOIR = 1028
QUANTILES = (("0.50", 0.5), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))
TIME_PARTS = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs", "ResponseQueueTimeMs",
              "ResponseSendTimeMs", "TotalTimeMs")
# Kafka's ApiKeys names where they are not our enum's name in CamelCase (key 74 was renamed in Kafka 4.1).
_API_NAMES = {ApiKey.LIST_CLIENT_METRICS_RESOURCES: "ListConfigResources"}
_FETCH = int(ApiKey.FETCH)
_TOO_LARGE = frozenset({10, 18})  # MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE: Kafka's BytesRejectedPerSec

# One family: (name, type "counter" | "gauge" | "summary", help, [(labels, value)]). A summary's samples are
# (labels with "quantile", value) plus its count under the family name + "_count" (see prometheus.py).
Family = tuple[str, str, str, list[tuple[dict[str, str], float]]]


def kafka_api_name(api_key: int) -> str:
    """Kafka's name of an API (ApiKeys.name: "Produce", "ListOffsets", "ApiVersions", ...)."""
    name = _API_NAMES.get(api_key)
    if name is None:
        try:
            name = "".join(part.capitalize() for part in ApiKey(api_key).name.split("_"))
        except ValueError:
            name = f"ApiKey{api_key}"
    return name


class TopicMetrics:
    __slots__ = ("messages_in", "bytes_in", "bytes_out", "bytes_rejected", "total_produce", "failed_produce",
                 "total_fetch", "failed_fetch")

    def __init__(self) -> None:
        self.messages_in = self.bytes_in = self.bytes_out = self.bytes_rejected = 0
        self.total_produce = self.failed_produce = self.total_fetch = self.failed_fetch = 0

    def add(self, other: TopicMetrics) -> None:
        for name in TopicMetrics.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


# (slot, Kafka's meter name) of BrokerTopicMetrics
_TOPIC_METERS = (("messages_in", "MessagesIn"), ("bytes_in", "BytesIn"), ("bytes_out", "BytesOut"),
                 ("bytes_rejected", "BytesRejected"), ("total_produce", "TotalProduceRequests"),
                 ("failed_produce", "FailedProduceRequests"), ("total_fetch", "TotalFetchRequests"),
                 ("failed_fetch", "FailedFetchRequests"))


class RequestStats:
    """One request name's counts by version and its last `_RESERVOIR` request times (ns, seven parts each)."""

    __slots__ = ("versions", "times", "next", "count")

    def __init__(self) -> None:
        self.versions: dict[int, int] = {}
        self.times: list[tuple[int, ...]] = []
        self.next = 0
        self.count = 0

    def record(self, version: int, parts: tuple[int, ...]) -> None:
        self.versions[version] = self.versions.get(version, 0) + 1
        self.count += 1
        if len(self.times) < _RESERVOIR:
            self.times.append(parts)
        else:
            self.times[self.next] = parts
            self.next = (self.next + 1) % _RESERVOIR


class RequestTimer:
    """One request's timestamps (perf_counter ns) from its frame's arrival to its answer's last byte."""

    __slots__ = ("metrics", "api_key", "version", "arrived", "dequeued", "completed", "local_ns", "throttle_ms",
                 "follower")

    def __init__(self, metrics: BrokerMetrics, api_key: int, version: int, arrived: int, dequeued: int) -> None:
        self.metrics = metrics
        self.api_key = api_key
        self.version = version
        self.arrived = arrived or dequeued
        self.dequeued = dequeued
        self.completed = 0
        self.local_ns = 0
        self.throttle_ms = 0
        self.follower = False

    def complete(self, local_ns: int, throttle_ms: int, follower: bool) -> None:
        """The answer is ready (or, with none, the request is done)."""
        self.completed = time.perf_counter_ns()
        self.local_ns = local_ns
        self.throttle_ms = throttle_ms or 0
        self.follower = follower

    def sent(self, handed_ns: int, written_ns: int) -> None:
        """Called by the connection: the answer was handed to it at `handed_ns`, its last byte left at
        `written_ns` (both 0 for a request without an answer)."""
        completed = self.completed or time.perf_counter_ns()
        if not handed_ns:
            handed_ns = written_ns = completed
        handling = completed - self.dequeued
        local = min(self.local_ns, handling)
        parts = (self.dequeued - self.arrived, local, handling - local, self.throttle_ms * 1_000_000,
                 max(handed_ns - completed, 0), written_ns - handed_ns, written_ns - self.arrived)
        self.metrics.record_request(self.api_key, self.version, self.follower, parts)


class BrokerMetrics:
    def __init__(self) -> None:
        self.topics: dict[str, TopicMetrics] = {}
        self.deleted_topics = TopicMetrics()  # what deleted topics counted: the all-topics sums keep it
        self.replication_bytes_in = 0
        self.replication_bytes_out = 0
        self.isr_shrinks = 0
        self.isr_expands = 0
        self.failed_isr_updates = 0
        self.requests: dict[str, RequestStats] = {}  # by Kafka's request name
        self._by_key: dict[int, RequestStats] = {}  # the same, by API key

    # ---------------------------------------------------------------- counting (event loop)
    def topic(self, topic: str) -> TopicMetrics:
        m = self.topics.get(topic)
        if m is None:
            m = self.topics[topic] = TopicMetrics()
        return m

    def remove_deleted_topics(self, live: Any) -> None:
        """Drop the series of topics no longer in `live` (a container of topic names), keeping their counts in
        the all-topics sums (done at scrape time: a deletion of thousands of partitions costs nothing more)."""
        for topic in [t for t in self.topics if t not in live]:
            self.deleted_topics.add(self.topics.pop(topic))

    def record_produce(self, topic: str, messages: int, size: int, error: int) -> None:
        """One partition of a produce: appended (`messages` records of `size` bytes), or refused with `error`."""
        m = self.topics.get(topic) or self.topic(topic)
        m.total_produce += 1
        if error:
            m.failed_produce += 1
            if error in _TOO_LARGE:
                m.bytes_rejected += size
        else:
            m.messages_in += messages
            m.bytes_in += size

    def record_fetch(self, results: Iterable[tuple[Any, Any]], from_follower: bool) -> None:
        """A fetch's partitions (TopicPartition, FetchPartitionData) as answered."""
        for tp, data in results:
            m = self.topics.get(tp.topic) or self.topic(tp.topic)
            m.total_fetch += 1
            if data.error:
                m.failed_fetch += 1
            elif from_follower:
                self.replication_bytes_out += data.size
            else:
                m.bytes_out += data.size

    def record_isr_update(self, old_size: int, new_size: int, ok: bool) -> None:
        if not ok:
            self.failed_isr_updates += 1
        elif new_size < old_size:
            self.isr_shrinks += 1
        elif new_size > old_size:
            self.isr_expands += 1

    def timer(self, api_key: int, version: int, arrived: int, dequeued: int) -> RequestTimer:
        return RequestTimer(self, api_key, version, arrived, dequeued)

    def record_request(self, api_key: int, version: int, follower: bool, parts: tuple[int, ...]) -> None:
        stats = self._by_key.get(api_key)
        if stats is None:
            stats = self._by_key[api_key] = self.requests.setdefault(kafka_api_name(api_key), RequestStats())
        stats.record(version, parts)
        if api_key == _FETCH:
            name = "FetchFollower" if follower else "FetchConsumer"
            stats = self.requests.get(name) or self.requests.setdefault(name, RequestStats())
            stats.record(version, parts)

    # ---------------------------------------------------------------- reading (event loop, at scrape time)
    def families(self) -> list[Family]:
        out: list[Family] = []
        total = TopicMetrics()
        total.add(self.deleted_topics)
        for m in self.topics.values():
            total.add(m)
        for slot, meter in _TOPIC_METERS:
            samples = [({}, float(getattr(total, slot)))]
            samples += [({"topic": t}, float(getattr(m, slot))) for t, m in sorted(self.topics.items())]
            out.append((f"kafka_server_brokertopicmetrics_{meter.lower()}", "counter",
                        f"Kafka's BrokerTopicMetrics {meter}PerSec (Count)", samples))
        for value, meter in ((self.replication_bytes_in, "ReplicationBytesIn"),
                             (self.replication_bytes_out, "ReplicationBytesOut")):
            out.append((f"kafka_server_brokertopicmetrics_{meter.lower()}", "counter",
                        f"Kafka's BrokerTopicMetrics {meter}PerSec (Count)", [({}, float(value))]))
        for value, meter in ((self.isr_shrinks, "IsrShrinks"), (self.isr_expands, "IsrExpands"),
                             (self.failed_isr_updates, "FailedIsrUpdates")):
            out.append((f"kafka_server_replicamanager_{meter.lower()}", "counter",
                        f"Kafka's ReplicaManager {meter}PerSec (Count)", [({}, float(value))]))
        requests = [({"request": name, "version": str(v)}, float(n))
                    for name, stats in sorted(self.requests.items()) for v, n in sorted(stats.versions.items())]
        out.append(("kafka_network_requestmetrics_requests", "counter",
                    "Kafka's RequestMetrics RequestsPerSec (Count)", requests))
        out.extend(self._time_families())
        return out

    def _time_families(self) -> list[Family]:
        by_part: list[list[tuple[dict[str, str], float]]] = [[] for _ in TIME_PARTS]
        for name, stats in sorted(self.requests.items()):
            columns = list(zip(*stats.times, strict=True)) if stats.times else [() for _ in TIME_PARTS]
            for i, column in enumerate(columns):
                ordered = sorted(column)
                samples = by_part[i]
                for label, q in QUANTILES:
                    samples.append(({"request": name, "quantile": label}, _percentile(ordered, q) / 1e6))
                samples.append(({"request": name, "__count__": ""}, float(stats.count)))
        return [(f"kafka_network_requestmetrics_{part.lower()}", "summary", f"Kafka's RequestMetrics {part}",
                 samples) for part, samples in zip(TIME_PARTS, by_part, strict=True)]


def _percentile(ordered: list[int], q: float) -> float:
    """Yammer's Snapshot.getValue: linear interpolation at position q * (n + 1)."""
    n = len(ordered)
    if n == 0:
        return 0.0
    pos = q * (n + 1)
    index = int(pos)
    if index < 1:
        return float(ordered[0])
    if index >= n:
        return float(ordered[-1])
    lower, upper = ordered[index - 1], ordered[index]
    return lower + (pos - index) * (upper - lower)
