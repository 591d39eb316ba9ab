"""Our broker as a KRaft broker (issue 20): the metadata image and deltas built from `__cluster_metadata`.

- image.py: MetadataImage and its parts (PartitionRegistration with Kafka's merge rules)
- delta.py: MetadataDelta (record-by-record replay) and local_changes (Kafka's TopicsDelta.localChanges)
- loader.py: MetadataLoader (batches of committed records, metadata transactions, snapshots)
- snapshot.py: metadata snapshots as records (storage/snapshot_file.py moves the bytes)
- format.py: `python -m broker format` (meta.properties v1, bootstrap.checkpoint)
- raft_client.py: the metadata log follower (an observer of the controller quorum)
- lifecycle.py: BrokerRegistration, BrokerHeartbeat, controlled shutdown; the channel to the controller
- publisher.py: images published to the MetadataCache, topic configs and the ReplicaManager
- broker_server.py: `KRaftBroker`, what KafkaServer.controller is in KRaft mode (KafkaServer.start picks it)
- admin.py: the admin requests sent to the controller (CreateTopics, DeleteTopics, CreatePartitions, configs,
  ElectLeaders, ...), in Envelopes (KIP-590) for the client a request is handled for
- assignments.py: JBOD (KIP-858): AssignReplicasToDirs, preferred directories, offline log dirs
- metadata_log.py: `__cluster_metadata-0/` on disk
- zk_apis.py: the APIs a KRaft broker does not enable
"""
