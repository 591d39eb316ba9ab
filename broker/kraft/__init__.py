"""Our broker as a KRaft broker (issue 20): the metadata image and deltas built from `__cluster_metadata`.

- image.py: MetadataImage and its parts (PartitionRegistration with Kafka's merge rules)
- delta.py: MetadataDelta (record-by-record replay) and local_changes (Kafka's TopicsDelta.localChanges)
- loader.py: MetadataLoader (batches of committed records, metadata transactions, snapshots)
- snapshot.py: metadata snapshots as records (storage/snapshot_file.py moves the bytes)
"""
