"""Real Apache Kafka, from Maven Central, for the tests, the compat harness and the benchmarks.

Our broker is shown to interoperate against the real thing, never against a stand-in we wrote: this package
resolves Kafka's own jars (`org.apache.kafka:kafka_2.13` and its runtime dependencies, `kafka-clients`,
`kafka-streams`, Connect, Spark's Kafka connector) with Maven into a local cache reused between runs
(`jars`), runs Kafka controllers, brokers and combined nodes on loopback (`node`), and Kafka's command-line
tools from the same jars (`tools`).

    ./dev py -m realkafka fetch            # resolve every bundle the tests use (what `./dev test` does lazily)
    ./dev py -m realkafka fetch --kafka 4.4.0 --clients 3.9.1

The versions the tests use are named here, once.
"""

from __future__ import annotations

# ZooKeeper mode (removed in Kafka 4.0): the mixed-cluster tests run Kafka 3.7 brokers beside ours.
ZOOKEEPER_KAFKA = "3.7.2"
# KRaft: a Kafka 4.1 cluster (the release that refused our broker first) and the newest release.
KRAFT_KAFKA_41 = "4.1.1"
KRAFT_KAFKA_LATEST = "4.4.0"
# The Java client versions the compat adapter is compiled against and run with.
JAVA_CLIENTS = ("3.7.2", "3.9.1", "4.4.0")
# Kafka Streams and Connect (connect-file, the FileStream connectors, is served up to 4.3.1).
STREAMS_KAFKA = "4.4.0"
CONNECT_KAFKA = "4.3.1"

__all__ = [
    "CONNECT_KAFKA",
    "JAVA_CLIENTS",
    "KRAFT_KAFKA_41",
    "KRAFT_KAFKA_LATEST",
    "STREAMS_KAFKA",
    "ZOOKEEPER_KAFKA",
]
