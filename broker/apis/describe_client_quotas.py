"""DescribeClientQuotas (key 48), versions 0–1: the quotas stored for users and client ids that match a filter,
as Kafka's ZkAdminManager answers (broker.security.quotas has the store and the model).

- Components name an entity type (`user`, `client-id`) with a match: 0 exact name, 1 the default entity,
  2 any name; an entity type without a component matches anything, unless `strict` (then only entities without
  that part). Entities without a quota are left out; names of default entities are null.
- INVALID_REQUEST for the whole request: a type named twice, an empty type, a match type other than 0–2, a
  match given where it must not be (or missing for an exact match), `ip` with `user` or `client-id`;
  UNSUPPORTED_VERSION for another entity type (Kafka's "Custom entity type ... not supported"). IP quotas
  (`ip`, connection_creation_rate) are not kept here: an `ip` filter matches nothing.
- With an authorizer, DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation
from broker.security.quotas import CLIENT_ID, DEFAULT, USER, Entity, QuotaStore
from protocol.errors import ErrorCode

API_KEY = 48
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_VERSION,
                                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED)

EXACT, DEFAULT_MATCH, ANY = 0, 1, 2


class _Invalid(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def _filter(components: list[Any]) -> dict[str, tuple[int, str | None]]:
    out: dict[str, tuple[int, str | None]] = {}
    for c in components:
        kind = c.entity_type
        if kind in out:
            raise _Invalid(ErrorCode.INVALID_REQUEST, f"Duplicate {kind} filter component entity type")
        if kind == "":
            raise _Invalid(ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type")
        if kind not in (USER, CLIENT_ID, "ip"):
            raise _Invalid(ErrorCode.UNSUPPORTED_VERSION, f"Custom entity type '{kind}' not supported")
        if c.match_type not in (EXACT, DEFAULT_MATCH, ANY):
            raise _Invalid(ErrorCode.INVALID_REQUEST, f"Unexpected match type: {c.match_type}")
        if (c.match is None) == (c.match_type == EXACT):
            raise _Invalid(ErrorCode.INVALID_REQUEST, f"Unexpected match for match type {c.match_type}: {c.match}")
        out[kind] = (c.match_type, c.match)
    if "ip" in out and (USER in out or CLIENT_ID in out):
        raise _Invalid(ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination, IP filter component "
                       "should not be used with user or clientId filter component.")
    return out


def _matches(component: tuple[int, str | None] | None, name: str | None, strict: bool) -> bool:
    if component is None:
        return name is None or not strict
    match_type, match = component
    if match_type == EXACT:
        return name == match
    if match_type == DEFAULT_MATCH:
        return name == DEFAULT
    return name is not None


def select(quotas: dict[Entity, dict[str, float]], wanted: dict[str, tuple[int, str | None]],
           strict: bool) -> list[tuple[Entity, dict[str, float]]]:
    if "ip" in wanted:
        return []
    return sorted(((entity, values) for entity, values in quotas.items()
                   if _matches(wanted.get(USER), entity[0], strict)
                   and _matches(wanted.get(CLIENT_ID), entity[1], strict)),
                  key=lambda e: (e[0][0] or "", e[0][1] or ""))


async def handle(ctx: RequestContext, request: Any) -> Any:
    Resp = response_type(request)
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message="Cluster authorization failed.", entries=None)
    try:
        wanted = _filter(request.components)
    except _Invalid as e:
        return response_for(request, throttle_time_ms=0, error_code=e.code, error_message=str(e), entries=None)
    controller = ctx.server.controller
    quotas = await controller.call(lambda: QuotaStore(controller.store).read_all())
    Entry = Resp.EntryData
    entries = []
    for (user, client), values in select(quotas, wanted, request.strict):
        parts = [(USER, user), (CLIENT_ID, client)]
        entries.append(Entry(
            entity=[Entry.EntityData(entity_type=kind, entity_name=None if name == DEFAULT else name)
                    for kind, name in parts if name is not None],
            values=[Entry.ValueData(key=k, value=v) for k, v in sorted(values.items())]))
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, entries=entries)
