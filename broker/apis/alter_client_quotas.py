"""AlterClientQuotas (key 49), versions 0–1: set or remove quotas of users and client ids, as Kafka's
ZkAdminManager (broker.security.quotas keeps them in the store, every broker applies them on the change
notification). Any broker serves it in ZooKeeper mode, as Kafka's.

- An entity is `user`, `client-id` or both, each a name or null (the default entity). Ops set a key to a
  value or remove it (`remove`); keys `producer_byte_rate`, `consumer_byte_rate` (whole numbers),
  `request_percentage`, `controller_mutation_rate`. `validate_only` checks and stores nothing.
- Per entity: INVALID_REQUEST for an unknown key ("Invalid configuration key ..."), a fractional byte rate
  ("Configuration ... must be a LONG value"), an entity type named twice or unknown, no entity type, or an `ip`
  entity (IP quotas are not kept here; Kafka's `ip` entity with `connection_creation_rate`).
- With an authorizer, ALTER_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every entity.
- KRaft mode (`process.roles=broker`): once authorized here, the request goes on to the controller as it came
  and its answer is returned (broker/kraft/admin.py `forward`); the ClientQuotaRecords come back to every
  broker through the metadata log. A controller that cannot be reached: REQUEST_TIMED_OUT for every entity.
- More than 10,000 ops in one request (a record each in Kafka's controller, `broker.controller.limits`): every
  entity POLICY_VIOLATION "Unable to perform excessively large batch operation.", nothing stored.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.controller.limits import EXCESSIVE_BATCH, too_many_records
from broker.security.acl import AclOperation
from broker.security.quotas import (
    CLIENT_ID,
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    QUOTA_KEYS,
    USER,
    Entity,
    QuotaStore,
)
from protocol.errors import ErrorCode

API_KEY = 49
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.INVALID_REQUEST, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                 ErrorCode.REQUEST_TIMED_OUT, ErrorCode.POLICY_VIOLATION)

_WHOLE = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE)


def _entity(parts: list[Any]) -> Entity:
    names: dict[str, str | None] = {}
    for p in parts:
        if p.entity_type in names:
            raise ValueError(f"Duplicate {p.entity_type} entity type")
        if p.entity_type == "ip":
            raise ValueError("IP quotas (connection_creation_rate) are not supported by this broker")
        if p.entity_type not in (USER, CLIENT_ID):
            raise ValueError(f"Unexpected entity type {p.entity_type}")
        names[p.entity_type] = DEFAULT if p.entity_name is None else p.entity_name
    if not names:
        raise ValueError("Invalid client quota entity")
    return names.get(USER), names.get(CLIENT_ID)


def _ops(ops: list[Any]) -> tuple[dict[str, float], list[str]]:
    upserts: dict[str, float] = {}
    removals: list[str] = []
    for op in ops:
        if op.key not in QUOTA_KEYS:
            raise ValueError(f"Invalid configuration key {op.key}")
        if op.remove:
            removals.append(op.key)
            continue
        value = op.value
        if op.key in _WHOLE:
            whole = int(value + 1e-6)
            if abs(whole - value) > 1e-6:
                raise ValueError(f"Configuration {op.key} must be a LONG value")
            value = float(whole)
        upserts[op.key] = value
    return upserts, removals


async def handle(ctx: RequestContext, request: Any) -> Any:
    Entry = response_type(request).EntryData
    allowed = ctx.authorize_cluster(AclOperation.ALTER_CONFIGS)
    controller = ctx.server.controller
    kraft = allowed and ctx.server.config.is_kraft
    if kraft:  # the controller writes ClientQuotaRecords (broker/kraft/admin.py)
        forwarded = await controller.admin.forward(request)
        if forwarded is not None:
            return forwarded
    store = QuotaStore(controller.store)
    # Kafka's controller writes a record per op and refuses the whole request past its bound
    excessive = allowed and not kraft and too_many_records(sum(len(entry.ops) for entry in request.entries))
    out = []
    for entry in request.entries:
        code, message = ErrorCode.NONE, None
        if excessive:
            code, message = ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH
        elif kraft:
            code, message = ErrorCode.REQUEST_TIMED_OUT, "The controller could not be reached."
        elif not allowed:
            code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        else:
            try:
                entity = _entity(entry.entity)
                upserts, removals = _ops(entry.ops)
            except ValueError as e:
                code, message = ErrorCode.INVALID_REQUEST, str(e)
            else:
                if not request.validate_only:
                    await controller.call(store.alter, entity, upserts, removals)
        out.append(Entry(error_code=code, error_message=message, entity=[
            Entry.EntityData(entity_type=p.entity_type, entity_name=p.entity_name) for p in entry.entity]))
    return response_for(request, throttle_time_ms=0, entries=out)
