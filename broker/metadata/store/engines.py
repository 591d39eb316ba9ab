"""The two engines of the metadata store, one logic: `TreeMetadataStore` over any znode tree.

Contract:
- `TreeMetadataStore` is the MetadataStore logic, assembled from one mixin per znode family (brokers.py,
  controller.py, topics.py, configs.py, partitions.py, admin_requests.py, producer_ids.py) over the shared
  plumbing of base.py. Both engines run exactly this code, so they behave identically.
- `ZkMetadataStore`: a real ZooKeeper through kazoo (zk_tree.py), Kafka 3.x ZooKeeper-mode layout and JSON
  (znodes.py), so Kafka's tools can read it. A chroot in the connect string ("host:port/kafka") is honoured.
- `LocalMetadataStore`: the embedded default, one node, state in `<log dir>/cluster-metadata.json`, written
  atomically (local_tree.py).
- Creating a store ensures Kafka's persistent top-level znodes exist and re-registers the broker after a
  ZooKeeper session expiry.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.metadata import znodes
from broker.metadata.local_tree import LocalTree
from broker.metadata.store.admin_requests import AdminRequestZnodes
from broker.metadata.store.base import Dispatch
from broker.metadata.store.brokers import BrokerZnodes
from broker.metadata.store.configs import ConfigZnodes
from broker.metadata.store.controller import ControllerZnodes
from broker.metadata.store.partitions import PartitionStateZnodes
from broker.metadata.store.producer_ids import ProducerIdBlockZnode
from broker.metadata.store.topics import TopicZnodes
from broker.metadata.tree import ZNodeTree

LOCAL_STATE_FILE = "cluster-metadata.json"


class TreeMetadataStore(BrokerZnodes, ControllerZnodes, TopicZnodes, ConfigZnodes, PartitionStateZnodes,
                        AdminRequestZnodes, ProducerIdBlockZnode):
    """The MetadataStore logic over any ZNodeTree; use ZkMetadataStore or LocalMetadataStore."""

    def __init__(self, tree: ZNodeTree, dispatch: Dispatch | None = None) -> None:
        super().__init__(tree, dispatch)
        tree.ensure_paths(list(znodes.PERSISTENT_PATHS))
        tree.on_session_renewed(self._reregister)

    def __enter__(self) -> TreeMetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class ZkMetadataStore(TreeMetadataStore):
    """The store on ZooKeeper (`zookeeper.connect`, optionally with a chroot: "host:port/kafka")."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int = 18000,
        dispatch: Dispatch | None = None,
    ) -> None:
        from broker.metadata.zk_tree import KazooTree

        tree = KazooTree(connect, session_timeout_ms, connection_timeout_ms)
        try:
            super().__init__(tree, dispatch)
        except BaseException:
            tree.close()
            raise
        self.connect = connect

    @property
    def session_id(self) -> int:
        tree = self._tree
        return int(getattr(tree, "session_id", 0))


class LocalMetadataStore(TreeMetadataStore):
    """The embedded single-node store: state in `<log_dir>/cluster-metadata.json`."""

    def __init__(self, log_dir: str | os.PathLike[str], *, dispatch: Dispatch | None = None) -> None:
        self.state_file = Path(log_dir) / LOCAL_STATE_FILE
        super().__init__(LocalTree(self.state_file), dispatch)
