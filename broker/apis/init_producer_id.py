"""InitProducerId (key 22), versions 0–5.

Idempotent producers (no transactional id) always get a fresh producer id with epoch 0, from blocks
persisted before use so no id is ever handed out twice, even across restarts (Kafka's behaviour for a
null transactional id). Transactional producers go to the transaction coordinator
(`broker/coordinator/transaction/`): epoch bump, fencing, KIP-360 (v3+: the producer's id and epoch; one of
them -1 without the other is INVALID_REQUEST), errors as Kafka's TransactionCoordinator: INVALID_REQUEST (empty
id), INVALID_TRANSACTION_TIMEOUT (over transaction.max.timeout.ms), PRODUCER_FENCED (KIP-360: another producer
id), CONCURRENT_TRANSACTIONS (a transition pending, a transaction completing, or an Ongoing one being fenced:
the client retries), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE (the state write
failed). Before v4 a client does not know PRODUCER_FENCED: it gets INVALID_PRODUCER_EPOCH, as Kafka's KafkaApis
answers. COORDINATOR_LOAD_IN_PROGRESS also answers an idempotent producer while the next block of ids is on
its way from the controller.
With an authorizer (Kafka): a transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.transaction.producer_id_manager import ProducerIdsUnavailable
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 22
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_TRANSACTION_TIMEOUT, ErrorCode.PRODUCER_FENCED,
    ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def handle(ctx: RequestContext, request: Any) -> Any:
    if ctx.server.authorizer is not None:
        if request.transactional_id is not None:
            if not ctx.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
                return _answer(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_PRODUCER_ID,
                               NO_PRODUCER_EPOCH)
        elif not ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE) and \
                not ctx.authorize_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC):
            return _answer(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    if request.transactional_id is None:
        assert ctx.server.producer_ids is not None
        try:
            pid = ctx.server.producer_ids.generate()
        except ProducerIdsUnavailable:  # waiting for the controller's next block; the client retries
            return _answer(request, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        return response_for(request, throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)
    pid, epoch = (request.producer_id, request.producer_epoch) if request.API_VERSION >= 3 else (-1, -1)
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return _answer(request, ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    expected = None if pid == NO_PRODUCER_ID else (pid, epoch)
    return _transactional(ctx, request, expected)


async def _transactional(ctx: RequestContext, request: Any, expected: tuple[int, int] | None) -> Any:
    coordinator = ctx.server.transaction_coordinator.coordinator
    error, pid, epoch = await coordinator.handle_init_producer_id(request.transactional_id,
                                                                  request.transaction_timeout_ms, expected)
    return _answer(request, error, pid, epoch)


def _answer(request: Any, error: ErrorCode, pid: int, epoch: int) -> Any:
    if error == ErrorCode.PRODUCER_FENCED and request.API_VERSION < 4:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return response_for(request, throttle_time_ms=0, error_code=error, producer_id=pid, producer_epoch=epoch)
