"""ApiVersions up to Kafka 4.4's v5 (KIP-1242: the ClusterId and NodeId the client means to reach), from our spec in
`protocol/schemas/`: kafka-python ships v0-4. A module of its own because every connection's first request is
ApiVersions, and broker start-up should not load the other specs (`protocol/inter_broker_messages.py`) for it.
Reach the classes through `protocol.messages`.
"""

from __future__ import annotations

import weakref

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata.api_versions import ApiVersionsResponse as _KafkaPythonApiVersionsResponse


class ApiVersionsRequest(ApiMessage, load_json='protocol.schemas'):
    pass


class ApiVersionsResponse(_KafkaPythonApiVersionsResponse, load_json='protocol.schemas'):
    """kafka-python's class with our spec: its response header is v0 at every version, as Kafka's."""


# Defining ApiVersionsResponse registered it in kafka-python's response registry; kafka-python clients running in
# this process keep their own class (they never send v5).
ResponseClassRegistry.register_response_class(weakref.proxy(_KafkaPythonApiVersionsResponse))
