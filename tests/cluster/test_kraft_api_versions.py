"""ApiVersions of our KRaft broker in a cluster at Kafka 4.1's levels, as a Kafka broker answers it: the
supported ranges it registered, the cluster's finalized levels (metadata.version and the quorum's kraft.version
included) and the metadata image's offset as the finalized-features epoch; v3 leaves out the ranges that start
at level 0 (KAFKA-17492)."""

from __future__ import annotations

import socket
from pathlib import Path

from broker.kraft.lifecycle import SUPPORTED_FEATURES
from protocol import ApiKey, request_class
from tests.broker.wire import roundtrip
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
