"""Share groups (KIP-932) on the share-partition leaders: `manager.py` (share sessions, ShareFetch and
ShareAcknowledge work, lock expiry), `share_partition.py` (one share partition's in-flight records and rules),
`persisters.py` (the one place choosing the Persister) and `rpc_persister.py` (the Persister over the
share-group state RPCs). The contract with the share coordinator, `Persister`, and its in-memory implementation
are the share coordinator's: broker/coordinator/share/persister.py and memory_persister.py. See
docs/share_groups.md."""
