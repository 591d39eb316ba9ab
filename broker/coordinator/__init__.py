"""Coordinators of internal topics (Kafka's kafka.coordinator): the leader of a partition of the internal
topic IS that partition's coordinator.

- runtime.py: `CoordinatorRuntime`, shared by every such coordinator: loads a partition's state from its log
  when this broker becomes its leader, unloads it on resignation, appends the coordinator's records through
  the ReplicaManager (acks=all), creates the topic on first use.
- group/: the classic consumer-group coordinator on `__consumer_offsets`.
- transaction/: the transaction coordinator on `__transaction_state`, the runtime's second shard.
- share/: the KIP-932 share coordinator on `__share_group_state` (share partitions' persisted state).
"""
