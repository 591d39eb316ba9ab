"""InitProducerId (key 22), versions 0–5.

Idempotent producers (no transactional id) always get a fresh producer id with epoch 0, from blocks
persisted before use so no id is ever handed out twice, even across restarts (Kafka's behaviour for a
null transactional id). Transactional producers are refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
and one log line: there is no transaction coordinator yet (compat/GAPS.md).
"""

from __future__ import annotations

import logging
from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.controller.producer_ids import ProducerIdsUnavailable
from protocol.errors import ErrorCode

log = logging.getLogger("broker.apis.init_producer_id")

API_KEY = 22
MIN_VERSION = 0
MAX_VERSION = 5


def handle(ctx: RequestContext, request: Any) -> Any:
    if request.transactional_id is not None:
        log.warning("client %s asked for transactional id %r: transactions are not supported",
                    ctx.client_id, request.transactional_id)
        return response_for(request, throttle_time_ms=0,
                            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                            producer_id=-1, producer_epoch=-1)
    assert ctx.server.producer_ids is not None
    try:
        pid = ctx.server.producer_ids.generate()
    except ProducerIdsUnavailable:  # waiting for the controller's next block; the client retries
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                            producer_id=-1, producer_epoch=-1)
    return response_for(request, throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
