"""Our KRaft controller (Kafka's `org.apache.kafka.controller` and ControllerServer; issue 32).

Contract:
- `server.ControllerServer`: a controller node (`process.roles=controller`, or the controller half of a combined
  node): the Raft voter of `__cluster_metadata` (broker/raft/), the quorum controller on it, the controller listener.
- `controller.QuorumController`: the active controller's state (the broker/kraft image, replayed by its loader) and
  the path of a request: rules -> records appended through the Raft client -> answered once committed.
- The rules, mixins of QuorumController (and of the test controller in tests/kraft_controller.py): `rules.py`
  (ClusterControlManager, ReplicationControlManager, ConfigurationControlManager, ProducerIdControlManager),
  `reassignment.py`, `jbod.py`, `security.py` (quotas, SCRAM, ACLs), `envelope.py` (forwarded requests).
- Known gaps: docs/kraft.md, "Our controller quorum".
"""
