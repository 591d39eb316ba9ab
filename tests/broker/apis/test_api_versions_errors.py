"""ApiVersions: every code of `broker.apis.api_versions.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import socket
from typing import Any

from broker.apis import api_versions
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.broker.test_api_versions import frame_of
from tests.broker.wire import recv

from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.API_VERSIONS)


def unsupported_version(b: Brokers) -> Any:
    # a version above ours: the server answers before decoding, in the v0 layout (KIP-511)
    with socket.create_connection(("127.0.0.1", b.single.port), timeout=10) as s:
        s.sendall(frame_of(Req[3](client_software_name="raw", client_software_version="1"), 5,
                           version=api_versions.MAX_VERSION + 1))
        return recv(s, ApiKey.API_VERSIONS, 0)


def rebootstrap_required(b: Brokers) -> Any:
    # KIP-1242: a Kafka 4.4 client names the cluster it means to reach; another cluster's id is refused
    return b.call(Req[5](client_software_name="raw", client_software_version="1", cluster_id="another-cluster",
                         node_id=b.single.server.broker_id))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNSUPPORTED_VERSION: unsupported_version,
    ErrorCode.INVALID_REQUEST: lambda b: b.call(Req[3](client_software_name="bad name!",
                                                       client_software_version="1")),
    ErrorCode.REBOOTSTRAP_REQUIRED: rebootstrap_required,
}

test_errors = error_path_test(api_versions, PRODUCERS)
