"""Share groups (KIP-932): share-partition leaders and the state persister they use (see persister.py)."""
