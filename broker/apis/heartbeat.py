"""Heartbeat (key 12), versions 0–4.

Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin, ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID (v3+) that it is out of the group.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext
from broker.coordinator.group import api as group_api

API_KEY = 12
MIN_VERSION = 0
MAX_VERSION = 4


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    return await group_api.heartbeat(coordinator, request, request.API_VERSION)
