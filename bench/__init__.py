"""Benchmarks of our broker side by side with reference peers in the same run (issue 7).

`python -m bench [--quick] [--target ours,mock,HOST:PORT] [--scenarios ...] [--profile]`;
see bench/README.md. Modules: cli (orchestration), scenarios, loads (client processes),
runner (process, topic and profiler helpers), targets (brokers), report (table, JSON),
wire (raw ApiVersions probe), mock_cluster (librdkafka's mock cluster in its own process).
"""
