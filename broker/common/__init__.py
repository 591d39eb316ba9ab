"""What every room of the broker may use (Kafka's org.apache.kafka.common.errors and server-common): the
errors the broker's domain objects raise with their Kafka error code (`errors.py`) and Kafka's inter-broker
protocol versions (`metadata_version.py`). It imports nothing from the rest of `broker`.
"""
