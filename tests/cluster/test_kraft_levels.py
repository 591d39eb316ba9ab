"""Our KRaft brokers follow the cluster's feature levels, here Kafka 4.1's:
- ApiVersions as a Kafka broker answers it: the supported ranges it registered, the cluster's finalized levels
  (metadata.version and the quorum's kraft.version included) and the metadata image's offset as the
  finalized-features epoch; v3 leaves out the ranges that start at level 0 (KAFKA-17492).
- Replica fetchers send the Fetch version the cluster's metadata.version allows (v17 from 3.9-IV0 on, v18 from
  4.1-IV1), not the one of inter.broker.protocol.version, which Kafka ignores in KRaft mode."""

from __future__ import annotations

import socket
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from broker.kraft.lifecycle import SUPPORTED_FEATURES
from protocol import ApiKey, request_class
from storage import TopicPartition
from tests.broker.wire import roundtrip
from tests.cluster.test_kraft_cluster import produce_and_consume, wait_for
from tests.cluster.test_kraft_features import _broker
from tests.kraft_controller import ControllerThread

Req = request_class(ApiKey.API_VERSIONS)


def test_api_versions_names_the_clusters_finalized_features(tmp_path: Path) -> None:
    controller = ControllerThread(metadata_version=27, kraft_version=1,
                                  features={"group.version": 1, "transaction.version": 1}).start()
    b = _broker(controller, tmp_path / "b", bootstrap_only=True)
    try:
        b.start()
        with socket.create_connection(("127.0.0.1", b.port), timeout=10) as sock:
            v4 = roundtrip(sock, Req[4](client_software_name="t", client_software_version="1"), 1)
            v3 = roundtrip(sock, Req[3](client_software_name="t", client_software_version="1"), 2)
        image = b.server.controller.loader.image
        assert {f.name: (f.min_version_level, f.max_version_level) for f in v4.finalized_features} == {
            "metadata.version": (27, 27), "group.version": (1, 1), "transaction.version": (1, 1),
            "kraft.version": (1, 1)}
        assert 0 < v4.finalized_features_epoch <= image.offset
        assert {f.name: (f.min_version, f.max_version) for f in v4.supported_features} == SUPPORTED_FEATURES
        assert {f.name for f in v3.supported_features} == {"metadata.version"}  # the only range not from 0
        assert {f.name for f in v3.finalized_features} == {f.name for f in v4.finalized_features}
    finally:
        b.stop()
        controller.stop()


def test_replica_fetchers_use_the_fetch_version_of_the_clusters_metadata_version(tmp_path: Path) -> None:
    controller = ControllerThread(metadata_version=27, features={"group.version": 1}).start()
    brokers = [_broker(controller, tmp_path / f"b{i}", node_id=i) for i in (1, 2)]
    try:
        for b in brokers:
            b.start()
        bootstrap = ",".join(b.bootstrap for b in brokers)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("mv27", 1, 2)])["mv27"].result(20)
        produce_and_consume(bootstrap, "mv27", 20)
        leader = controller.call(lambda c: c.image.topics.get_partition("mv27", 0)).leader
        follower = brokers[2 - leader]  # node ids 1 and 2: the other one
        fetcher = follower.call(lambda: follower.server.replica_manager.fetcher_manager.fetchers[leader])
        assert fetcher.endpoint.conn.version_caps[ApiKey.FETCH] == 18  # inter.broker.protocol.version 3.7: 16
        tp = TopicPartition("mv27", 0)
        wait_for(lambda: follower.call(lambda: follower.server.replica_manager.partitions[tp].log_end_offset) == 20,
                 what="the follower caught up at Fetch v18")
    finally:
        for b in brokers:
            b.stop()
        controller.stop()
