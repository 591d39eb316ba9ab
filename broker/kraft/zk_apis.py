"""The APIs a KRaft broker does not serve: ZooKeeper mode's controller-to-broker requests and the requests only
a controller answers (Kafka's ApiMessageType listeners: zkBroker and controller, not broker).

Kafka's KRaft broker leaves them out of ApiVersions and closes the connection of a client that sends one
("Received request api key LEADER_AND_ISR ... which is not enabled"); `refuse(ctx)` does the same here, and
the ApiVersions handler leaves `ZK_BROKER_ONLY` out in KRaft mode.
"""

from __future__ import annotations

from typing import Any

from protocol import ApiKey
from protocol.api_keys import api_name

ZK_BROKER_ONLY = frozenset({
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.ALTER_PARTITION, ApiKey.ALLOCATE_PRODUCER_IDS,
})


def refused(ctx: Any) -> bool:
    """In KRaft mode: close the connection (no answer) and return True; else False."""
    if not ctx.server.config.is_kraft or ctx.api_key not in ZK_BROKER_ONLY:
        return False
    if ctx.connection is not None:
        ctx.connection.close(f"{api_name(ctx.api_key)} v{ctx.api_version} is not enabled on a KRaft broker")
    return True
