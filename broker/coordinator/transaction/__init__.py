"""The transaction coordinator and its `__transaction_state` persistence (Kafka's kafka.coordinator.transaction).

- metadata.py: `TransactionMetadata`, `TransactionState` and Kafka's transitions (pure).
- log.py: the TransactionLogKey / TransactionLogValue record bytes.
- state_manager.py: `TransactionStateManager`, the cache per `__transaction_state` partition (the shard of the
  shared runtime) and the only writer of the topic.
- coordinator.py: `TransactionCoordinator`, the request logic (InitProducerId, AddPartitionsToTxn,
  AddOffsetsToTxn, EndTxn, Describe/ListTransactions, the timeout abort).
- markers.py: `TransactionMarkerChannelManager`, WriteTxnMarkers to the partition leaders, then Complete*.
- service.py: `TransactionService`, wiring all of it into a broker (config, topic, runtime, timers).
The API handlers live in broker/apis/ (add_partitions_to_txn.py, end_txn.py, write_txn_markers.py, ...).
"""
