"""ApiVersions v4 advertises `share.version` (KIP-932) supported 0-1 and finalized at 1, with the share-group
APIs (ShareFetch and ShareAcknowledge up to Kafka 4.2's v2); v3 leaves the range out (it starts at 0,
KAFKA-17492) but not the finalized level; v0-v2 answers carry no features."""

from __future__ import annotations

import socket

from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from tests.broker.wire import roundtrip

Req = request_class(ApiKey.API_VERSIONS)


def test_share_version_is_advertised_with_the_share_apis(broker: EmbeddedBroker) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as s:
        resp = roundtrip(s, Req[4](client_software_name="test", client_software_version="1"), 1)
        v3 = roundtrip(s, Req[3](client_software_name="test", client_software_version="1"), 3)
        old = roundtrip(s, Req[2](), 2)
    assert [(f.name, f.min_version, f.max_version) for f in resp.supported_features
            if f.name == "share.version"] == [("share.version", 0, 1)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in resp.finalized_features
            if f.name == "share.version"] == [("share.version", 1, 1)]
    assert "share.version" not in {f.name for f in v3.supported_features}
    assert "share.version" in {f.name for f in v3.finalized_features}
    assert {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys if k.api_key in range(76, 80)} == {
        (76, 1, 1), (77, 1, 1), (78, 1, 2), (79, 1, 2)}
    assert {k.api_key for k in old.api_keys} >= {76, 77, 78, 79}
