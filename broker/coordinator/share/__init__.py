"""The share coordinator (KIP-932) on `__share_group_state` (Kafka's share-coordinator module).

- records.py: ShareSnapshot/ShareUpdate keys and values, byte-compatible with Kafka 4.x.
- batches.py: merging state batches (Kafka's PersisterStateBatchCombiner rule).
- state.py: the shard: each share partition's state, its epochs, the rules and error codes of the state RPCs.
- service.py: the broker's wiring: config, the topic, the shared `CoordinatorRuntime`.
- persister.py: the `Persister` contract between share-partition leaders (broker/share/) and this coordinator
  (Kafka's server-common share.persister), used by the group coordinator too; memory_persister.py: its rules in
  memory, without the network or the topic.
The state RPC handlers are broker/apis/*_share_group_state*.py; the client side is broker/share/rpc_persister.py.
"""
