"""DescribeUserScramCredentials (key 50), version 0: the SCRAM mechanisms and iteration counts stored for users
(never salts or keys), as Kafka's ZkAdminManager answers.

- No users (null or empty): every user with a SCRAM credential, sorted by name.
- Named users: one result each, in request order, a user named twice once: DUPLICATE_RESOURCE
  ("Cannot describe SCRAM credentials for the same user twice in a single request: <user>"); an empty name
  RESOURCE_NOT_FOUND ("Username must not be empty"); a user without a credential RESOURCE_NOT_FOUND
  ("Attempt to describe a user credential that does not exist: <user>").
- With an authorizer, DESCRIBE on the cluster is needed, else CLUSTER_AUTHORIZATION_FAILED at the top and for
  each named user (Kafka's getErrorResponse).
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation
from broker.security.credentials import CredentialStore
from broker.security.scram import MECHANISM_TYPES
from protocol.errors import ErrorCode

API_KEY = 50
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.RESOURCE_NOT_FOUND, ErrorCode.DUPLICATE_RESOURCE,
                                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def _describe(store: CredentialStore, users: list[str] | None) -> list[tuple[str, int, str | None, list]]:
    """(user, error, message, [(mechanism type, iterations)]) per result; runs on the metadata thread."""
    def infos(user: str) -> list[tuple[int, int]]:
        return [(MECHANISM_TYPES[m], c.iterations) for m, c in sorted(store.mechanisms(user).items())]

    if not users:
        return [(u, 0, None, i) for u in store.users() if (i := infos(u))]
    out: list[tuple[str, int, str | None, list]] = []
    seen: set[str] = set()
    for user in users:
        if user in seen:
            continue
        seen.add(user)
        if not user:
            out.append((user, ErrorCode.RESOURCE_NOT_FOUND, "Username must not be empty", []))
        elif users.count(user) > 1:
            out.append((user, ErrorCode.DUPLICATE_RESOURCE,
                        f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}", []))
        elif not (found := infos(user)):
            out.append((user, ErrorCode.RESOURCE_NOT_FOUND,
                        f"Attempt to describe a user credential that does not exist: {user}", []))
        else:
            out.append((user, ErrorCode.NONE, None, found))
    return out


async def handle(ctx: RequestContext, request: Any) -> Any:
    Result = response_type(request).DescribeUserScramCredentialsResult
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        code, message = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        return response_for(request, throttle_time_ms=0, error_code=code, error_message=message, results=[
            Result(user="", error_code=code, error_message=message, credential_infos=[])
            for _ in request.users or []])
    controller = ctx.server.controller
    users = None if request.users is None else [u.name for u in request.users]
    results = await controller.call(_describe, CredentialStore(controller.store), users)
    return response_for(request, throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=[
        Result(user=user, error_code=error, error_message=message, credential_infos=[
            Result.CredentialInfo(mechanism=m, iterations=i) for m, i in infos])
        for user, error, message, infos in results])
