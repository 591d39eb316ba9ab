"""The replication path of one broker (Kafka's kafka.server, without KafkaApis and KafkaServer).

- `replica_manager.py`: `ReplicaManager`, the partitions this broker hosts, produce and fetch against them,
  LeaderAndIsr and StopReplica;
- `purgatory.py` and the delayed operations `delayed_produce.py`, `delayed_fetch.py`,
  `delayed_delete_records.py` (Kafka's DelayedOperationPurgatory, DelayedProduce, DelayedFetch,
  DelayedDeleteRecords);
- `fetcher.py`: the replica fetchers of a follower (ReplicaFetcherManager, ReplicaFetcherThread, LeaderEndPoint);
- `fetch_session.py`: incremental fetch sessions (KIP-227, FetchSessionCache);
- `log_writes.py`: appends off the event loop and their completions;
- `log_dir_mover.py`: replicas moving between log dirs (ReplicaAlterLogDirsManager);
- `txn_verification.py`: KIP-890's verification of transactional appends (AddPartitionsToTxnManager).

It uses `broker.cluster` (Partition), `broker.network` (the inter-broker connection), `broker.metadata` (the
metadata cache), `broker.config` and `broker.common`; never the handlers, the coordinators or the controller.
What it needs of the broker around it comes as callbacks or through the protocols it defines.
"""
