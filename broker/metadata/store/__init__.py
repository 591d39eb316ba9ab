"""The cluster metadata store: brokers, controller, topics, partition state, configs, notifications.

Contract:
- `MetadataStore` (interface.py) is the interface the controller and brokers use. Two engines implement it
  with the same code over a znode tree (tree.py), so they behave identically (engines.py):
  `ZkMetadataStore` (a real ZooKeeper through kazoo, Kafka 3.x ZooKeeper-mode layout and JSON, see
  znodes.py, so Kafka's tools can read it) and `LocalMetadataStore` (the embedded default: one
  node, state in `<first log dir>/cluster-metadata.json`, written atomically).
- The logic is cut by znode family, as Kafka's KafkaZkClient groups it: brokers.py (registration, cluster
  id, broker sequence ids), controller.py (election and epoch), topics.py (assignments, deletion),
  configs.py (topic configs and change notifications), partitions.py (partition state, ISR change
  notifications), admin_requests.py (reassignment, preferred election), producer_ids.py (id blocks);
  base.py holds what they share.
- Every method is synchronous and may block on the network: the broker calls them from its metadata
  thread. Failures are `MetadataError` subclasses (types.py).
- Watches: each `watch_*` callback is invoked through the `dispatch` callable given to the store
  (the broker passes `loop.call_soon_threadsafe`), never directly from kazoo's thread. The
  state-style watches (brokers, controller, topics, deletions) fire once at registration with the
  current value and again after changes, with the whole current value (not a delta); rapid
  changes may coalesce into one call, the last call always carries the current state.
  The notification-style watches (config changes, ISR changes) deliver each notification once.
- Fencing: `elect_controller` returns the new controller epoch when this broker won and records the
  /controller_epoch znode version in `controller_epoch_zk_version`. Controller writes pass that
  version as `controller_epoch_zk_version=`; the write is then a transaction that first checks
  /controller_epoch is unchanged, so a controller that was replaced gets ControllerMovedError and
  changes nothing (Kafka's checkControllerEpochZkVersion). Partition state updates are also
  conditional on the state znode version (`expected_version`, Kafka's partition epoch / zkVersion):
  a lost race raises BadVersionError.
- Broker registration is ephemeral: it disappears when the session ends (close, crash, expiry);
  after a ZooKeeper session expiry the store re-registers the broker in the new session.
"""

from broker.metadata.store.base import Dispatch
from broker.metadata.store.engines import (
    LOCAL_STATE_FILE,
    LocalMetadataStore,
    TreeMetadataStore,
    ZkMetadataStore,
)
from broker.metadata.store.interface import MetadataStore
from broker.metadata.store.topics import validate_assignment, validate_topic_name

__all__ = [
    "LOCAL_STATE_FILE",
    "Dispatch",
    "LocalMetadataStore",
    "MetadataStore",
    "TreeMetadataStore",
    "ZkMetadataStore",
    "validate_assignment",
    "validate_topic_name",
]
