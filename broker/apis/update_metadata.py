"""UpdateMetadata (key 6), versions 0–8 — from the controller (ZooKeeper mode).

Replaces this broker's view of live brokers and of the listed partitions (leader, leader epoch, ISR,
replicas, offline replicas, topic ids v7+); a leader of -2 marks a deleted topic. Requests carrying an
older controller epoch than the last one seen are refused with STALE_CONTROLLER_EPOCH.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.controller.requests import parse_update_metadata
from protocol.errors import ErrorCode

API_KEY = 6
MIN_VERSION = 0
MAX_VERSION = 8


def handle(ctx: RequestContext, request: Any) -> Any:
    brokers, partitions = parse_update_metadata(request)
    ok = ctx.server.apply_update_metadata(request.controller_id, request.controller_epoch, brokers, partitions)
    return response_for(request, error_code=ErrorCode.NONE if ok else ErrorCode.STALE_CONTROLLER_EPOCH)
