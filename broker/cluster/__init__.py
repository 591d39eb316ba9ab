"""A partition's replicas on this broker (Kafka's kafka.cluster and its replica selector).

- `partition.py`: `Partition`, one partition's log, leader or follower state, high watermark (its docstring is
  the specification of the high watermark);
- `partition_isr.py`: `IsrManagement`, the half of `Partition` that proposes ISR changes;
- `replica.py`: the leader's view of one follower (`Replica`);
- `replica_selector.py`: which replica a consumer fetches from (KIP-392).

Pure replication rules over `storage` logs: it uses `broker.common` only, and learns of the rest of the broker
through the callbacks it is given (`isr_updater`, `on_isr_change`).
"""
