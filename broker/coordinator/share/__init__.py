"""The share coordinator (KIP-932) on `__share_group_state` (Kafka's share-coordinator module).

- records.py: ShareSnapshot/ShareUpdate keys and values, byte-compatible with Kafka 4.x.
- batches.py: merging state batches (Kafka's PersisterStateBatchCombiner rule).
- state.py: the shard: each share partition's state, its epochs, the rules and error codes of the state RPCs.
- service.py: the broker's wiring: config, the topic, the shared `CoordinatorRuntime`.
The state RPC handlers are broker/apis/*_share_group_state*.py; the client side is broker/share/rpc_persister.py.
"""
