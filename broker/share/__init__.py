"""Share groups (KIP-932) on the share-partition leaders: `manager.py` (share sessions, ShareFetch and
ShareAcknowledge work, lock expiry), `share_partition.py` (one share partition's in-flight records and rules),
`persister.py` (the contract with the share coordinator), `persisters.py` (the one place choosing the
Persister) and `memory_persister.py` (the in-memory one). See docs/share_groups.md."""
