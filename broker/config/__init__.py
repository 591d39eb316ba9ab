"""Configuration (Kafka's KafkaConfig, DynamicBrokerConfig, LogConfig and GroupConfig): what the broker is told
and how it is told so.

- `kafka_config.py`: `KafkaConfig`, the `server.properties` namespace with Kafka's precedence and checks;
- `keys.py`, `types.py`, `support.py`: the tables of every broker and topic key, the value model (types,
  validators, sources), which keys act here;
- `topics.py`: topic names and topic configs (broker defaults and per-topic overrides);
- `describe.py`: what DescribeConfigs reports for a topic or a broker;
- `dynamic.py`, `dynamic_store.py`: dynamic broker configs (KIP-226) and their place in the metadata store;
- `group_configs.py`: group configs (ConfigResource type GROUP);
- `alter.py`: the checks and incremental operations every AlterConfigs of a resource shares.

Below every room that is configured: it uses only `broker.common` and the metadata store (`broker.metadata`).
What it needs of the broker it is told through the small protocols it defines.
"""
