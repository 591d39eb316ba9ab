"""The APIs a broker serves in one mode only (Kafka's ApiMessageType listeners): ZooKeeper mode's
controller-to-broker requests and the requests only a controller answers are not enabled on a KRaft broker
(`ZK_BROKER_ONLY`), and the KRaft APIs a KRaft broker sends on to its controller are not enabled on a ZooKeeper-mode
or single-node broker (`KRAFT_BROKER_ONLY`, e.g. DescribeQuorum: a ZooKeeper cluster has no quorum).

Kafka leaves them out of ApiVersions and closes the connection of a client that sends one ("Received request
api key LEADER_AND_ISR ... which is not enabled"); `refused(ctx)` does the same here, and the ApiVersions handler
leaves `hidden(config)` out.
"""

from __future__ import annotations

from typing import Any

from protocol import ApiKey
from protocol.api_keys import api_name

ZK_BROKER_ONLY = frozenset({
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA, ApiKey.CONTROLLED_SHUTDOWN,
    ApiKey.ALTER_PARTITION, ApiKey.ALLOCATE_PRODUCER_IDS,
})


KRAFT_BROKER_ONLY = frozenset({ApiKey.DESCRIBE_QUORUM})


def hidden(config: Any) -> frozenset[int]:
    """The API keys this broker's mode does not enable."""
    return ZK_BROKER_ONLY if config.is_kraft else KRAFT_BROKER_ONLY


def refused(ctx: Any) -> bool:
    """For an API this broker's mode does not enable: close the connection (no answer) and return True."""
    if ctx.api_key not in hidden(ctx.server.config):
        return False
    if ctx.connection is not None:
        mode = "a KRaft broker" if ctx.server.config.is_kraft else "a ZooKeeper-mode broker"
        ctx.connection.close(f"{api_name(ctx.api_key)} v{ctx.api_version} is not enabled on {mode}")
    return True
