"""Client requests wait for the controller's first UpdateMetadata; the controller's own requests do not.

A broker that joins a cluster is reachable before the controller's UpdateMetadata reaches it. Answered
then, a Metadata request lists no brokers and no controller, and librdkafka's admin client waited for a
controller for its whole timeout (CreateTopics "Failed while waiting for controller", seen in CI under
load). Kafka's KRaft brokers serve clients only once they have caught up with the metadata.
"""

from __future__ import annotations

import asyncio
import select
import socket

from broker.metadata.metadata_cache import BrokerEndpoint
from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from tests.broker.wire import recv, send


def test_metadata_request_waits_for_the_first_update_metadata(tmp_path) -> None:
    with EmbeddedBroker(data_dir=tmp_path) as broker:
        server = broker.server
        loop = broker.loop
        assert loop is not None
        # As a broker that has registered but not yet heard from the controller.
        loop.call_soon_threadsafe(server.metadata_ready.clear)
        epoch = server.metadata_cache.controller_epoch
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
            versions = request_class(ApiKey.API_VERSIONS)[3](client_software_name="t", client_software_version="1")
            send(sock, versions, 1)
            assert recv(sock, ApiKey.API_VERSIONS, 3).error_code == 0  # ApiVersions is not held back
            send(sock, request_class(ApiKey.METADATA)[12](topics=None, allow_auto_topic_creation=False,
                                                           include_topic_authorized_operations=False), 2)
            readable, _, _ = select.select([sock], [], [], 0.5)
            assert not readable, "Metadata was answered before the controller's UpdateMetadata"
            me = BrokerEndpoint(server.broker_id, "127.0.0.1", broker.port)
            asyncio.run_coroutine_threadsafe(_apply(server, epoch + 1, me), loop).result(10)
            response = recv(sock, ApiKey.METADATA, 12)
        assert [b.node_id for b in response.brokers] == [server.broker_id]
        assert response.controller_id == server.broker_id


async def _apply(server, epoch: int, me: BrokerEndpoint) -> None:  # noqa: ANN001
    server.apply_update_metadata(server.broker_id, epoch, [me], [])
