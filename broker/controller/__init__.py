"""The ZooKeeper-mode controller, cut along Kafka's kafka.controller package.

Public API:
- controller.py: `Controller`, one per broker (active on the broker that won /controller): event queue,
  lifecycle, controller election, broker and topic changes, controlled shutdown.
- admin_manager.py: `AdminManager` (as `Controller.admin`), the admin entry points any broker serves
  (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs), with `NewTopic` and `TopicResult`;
  config_admin.py: AlterConfigs and IncrementalAlterConfigs resource by resource (Kafka's ConfigAdminManager and
  ZkAdminManager.alterConfigs), what the handlers of both modes call.
- channel_manager.py: channels to brokers (in-process or over the wire) and the LeaderAndIsr/UpdateMetadata/
  StopReplica batches; requests.py builds and parses those requests (the receiving handlers use it too).
- election.py: pure leader election (offline/unclean, controlled shutdown, preferred, reassignment, new).
- partition_state_machine.py, reassignment.py, topic_deletion.py, isr_changes.py, preferred_election.py:
  what the active controller does with them; context.py: what it knows.
- producer_ids.py: producer id blocks for InitProducerId (local file, or the metadata store).
- alter_partition.py: AlterPartition (KIP-497), the controller's judgement and the leader's proposals;
  controller_client.py: a broker's requests to the active controller (AlterPartition, AllocateProducerIds).
The controller requests of Kafka 2.7+ brokers: AllocateProducerIds (`Controller.allocate_producer_ids`,
producer_ids.py), AlterPartition (alter_partition.py) and ElectLeaders (preferred_election.py).
"""

from broker.controller.admin_manager import AdminManager, NewTopic, TopicResult
from broker.controller.channel_manager import LEADER_DURING_DELETE
from broker.controller.controller import Controller
from broker.controller.election import NO_LEADER

__all__ = ["LEADER_DURING_DELETE", "NO_LEADER", "AdminManager", "Controller", "NewTopic", "TopicResult"]
