"""Kafka's metrics and KIP-714 client telemetry, for Prometheus.

- `broker_metrics.py`: the counters (BrokerTopicMetrics, ReplicaManager ISR meters, RequestMetrics with Kafka's
  request-time parts), plain integers the broker adds to on its hot paths while `metrics.prometheus.listener` is set.
- `broker_state.py`: Kafka's gauges, read from the broker at scrape time.
- `prometheus.py`: the HTTP endpoint (`prometheus_client`, imported only when the listener is set).
- `client_metrics.py`: KIP-714: `client-metrics` subscriptions, client instances, pushed metrics; `otlp.py` decodes
  the pushed OpenTelemetry metrics.

This package imports nothing of the server, the handlers or the replication path: they call into it.
"""
