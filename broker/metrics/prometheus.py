"""The Prometheus endpoint: `metrics.prometheus.listener=http://host:port` serves `GET /metrics`.

Contract:
- `parse_listener(text)`: (host, port) of `http://host:port` (port 0: a free one), or None when it is not one.
- `PrometheusEndpoint.start(listener, loop, collect)` serves the text exposition format with `prometheus_client`
  (imported here only, so a broker without the listener never loads it) from its own daemon thread; `.port` is the
  port bound. Each scrape asks the event loop for `collect()` (the families of broker_metrics.py and
  broker_state.py, a snapshot of numbers taken in one loop turn: no state is read from another thread) and
  formats them in the HTTP thread; a loop that does not answer within 10 s makes that scrape fail (HTTP 500).
- Families: "counter" becomes a Prometheus counter (`name_total`), "gauge" a gauge, "summary" Kafka's
  percentiles as `name{quantile="0.99"}` with `name_count` (the JMX exporter's names for a Yammer histogram).
- `stop()` closes the listener (broker shutdown).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from broker.metrics.broker_metrics import Family

_LISTENER = re.compile(r"http://(\[[0-9a-fA-F:.]+\]|[^:/\[\]]*):(\d{1,5})/?")
_SCRAPE_TIMEOUT_S = 10.0


def parse_listener(text: str) -> tuple[str, int] | None:
    m = _LISTENER.fullmatch(text.strip())
    if m is None or int(m.group(2)) > 65535:
        return None
    return m.group(1).strip("[]") or "0.0.0.0", int(m.group(2))


class _Collector:
    def __init__(self, loop: asyncio.AbstractEventLoop, collect: Callable[[], list[Family]]) -> None:
        self.loop = loop
        self.collect_families = collect

    def collect(self) -> Iterator[Any]:
        from prometheus_client.metrics_core import Metric

        async def snapshot() -> list[Family]:
            return self.collect_families()

        families = asyncio.run_coroutine_threadsafe(snapshot(), self.loop).result(_SCRAPE_TIMEOUT_S)
        for name, kind, help_, samples in families:
            if kind == "counter":
                metric = Metric(name, help_, "counter")
                for labels, value in samples:
                    metric.add_sample(name + "_total", labels, value)
                yield metric
            elif kind == "summary":
                metric = Metric(name, help_, "summary")
                for labels, value in samples:
                    if "__count__" in labels:
                        metric.add_sample(name + "_count", {k: v for k, v in labels.items() if k != "__count__"}, value)
                    else:
                        metric.add_sample(name, labels, value)
                yield metric
            else:
                metric = Metric(name, help_, "gauge")
                for labels, value in samples:
                    metric.add_sample(name, labels, value)
                yield metric


class PrometheusEndpoint:
    def __init__(self, server: Any, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread
        self.host, self.port = server.server_address[:2]

    @classmethod
    def start(cls, listener: str, loop: asyncio.AbstractEventLoop, collect: Callable[[], list[Family]]
              ) -> PrometheusEndpoint:
        from prometheus_client import CollectorRegistry, start_http_server

        parsed = parse_listener(listener)
        if parsed is None:
            raise ValueError(f"metrics.prometheus.listener {listener!r} is not http://host:port")
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_Collector(loop, collect))  # type: ignore[arg-type]
        server, thread = start_http_server(parsed[1], addr=parsed[0], registry=registry)
        return cls(server, thread)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
