"""AlterUserScramCredentials (key 51), version 0: upsert and delete users' SCRAM credentials in the metadata
store (`/config/users/<user>`, Kafka's format), as Kafka's ZkAdminManager does. Only the active controller
alters them; any other broker answers NOT_CONTROLLER for every user (Kafka's KafkaApis in ZooKeeper mode). With
an authorizer, ALTER on the cluster is needed, else CLUSTER_AUTHORIZATION_FAILED for every user.

Per user, checked in Kafka's order, one result each:
- an empty name: UNACCEPTABLE_CREDENTIAL "Username must not be empty"; a mechanism other than SCRAM-SHA-256 (1)
  or SCRAM-SHA-512 (2): UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism"; an upsertion with fewer than
  4096 or more than 16384 iterations: UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many iterations";
- the same user and mechanism twice: DUPLICATE_RESOURCE "A user credential cannot be altered twice in the
  same request";
- deleting a credential that is not stored: RESOURCE_NOT_FOUND "Attempt to delete a user credential that does
  not exist";
- otherwise the user's deletions and upsertions are stored together (the client sends the salt and the
  salted password; the stored and server keys are derived from them) and the result is NONE.
KRaft mode (`process.roles=broker`): every broker takes it; once authorized here, the request goes on to the
controller as it came (broker/kraft/admin.py `forward`), which applies the rules above and writes the credential
records every broker reads from the metadata log. A controller that cannot be reached: REQUEST_TIMED_OUT for
every user.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.security.acl import AclOperation
from broker.security.credentials import CredentialStore
from broker.security.scram import MAX_ITERATIONS, MECHANISM_TYPES, MIN_ITERATIONS, credential_from_salted_password
from protocol.errors import ErrorCode

API_KEY = 51
MIN_VERSION = 0
MAX_VERSION = 0
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.NOT_CONTROLLER, ErrorCode.UNACCEPTABLE_CREDENTIAL,
                                 ErrorCode.UNSUPPORTED_SASL_MECHANISM, ErrorCode.DUPLICATE_RESOURCE,
                                 ErrorCode.RESOURCE_NOT_FOUND, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                 ErrorCode.REQUEST_TIMED_OUT)

_NAMES = {t: m for m, t in MECHANISM_TYPES.items()}


def _invalid(upsertions: list, deletions: list) -> dict[str, tuple[int, str]]:
    out: dict[str, tuple[int, str]] = {}
    for d in deletions:
        if not d.name:
            out[d.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif d.mechanism not in _NAMES:
            out[d.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    for u in upsertions:
        if not u.name:
            out[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
        elif u.mechanism not in _NAMES:
            out[u.name] = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        elif u.iterations < MIN_ITERATIONS or u.iterations > MAX_ITERATIONS:
            out[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                           "Too many iterations" if u.iterations > MAX_ITERATIONS else "Too few iterations")
    return out


def _alter(store: CredentialStore, upsertions: list, deletions: list) -> list[tuple[str, int, str | None]]:
    results: list[tuple[str, int, str | None]] = [(user, e, m) for user, (e, m) in _invalid(upsertions,
                                                                                            deletions).items()]
    invalid = {user for user, _, _ in results}
    pairs = Counter((x.name, x.mechanism) for x in [*upsertions, *deletions] if x.name not in invalid)
    duplicated = {user for (user, _), n in pairs.items() if n > 1}
    results += [(user, ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
                for user in sorted(duplicated)]
    candidates = [user for user in dict.fromkeys(user for user, _ in pairs) if user not in duplicated]
    for user in candidates:
        stored = store.mechanisms(user)
        gone = [_NAMES[d.mechanism] for d in deletions if d.name == user]
        if any(m not in stored for m in gone):
            results.append((user, ErrorCode.RESOURCE_NOT_FOUND,
                            "Attempt to delete a user credential that does not exist"))
            continue
        upserts = {_NAMES[u.mechanism]: credential_from_salted_password(
            _NAMES[u.mechanism], bytes(u.salted_password), bytes(u.salt), u.iterations)
            for u in upsertions if u.name == user}
        store.alter(user, upserts, gone)
        results.append((user, ErrorCode.NONE, None))
    return results


async def handle(ctx: RequestContext, request: Any) -> Any:
    Result = response_type(request).AlterUserScramCredentialsResult
    controller = ctx.server.controller
    # Kafka's order: the controller check first, then ALTER on the cluster; either answers every user, sorted.
    refused: tuple[ErrorCode, str | None] | None = None
    if controller is None or not controller.active:
        refused = ErrorCode.NOT_CONTROLLER, None
    elif not ctx.authorize_cluster(AclOperation.ALTER):
        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
    if refused is not None:
        users = sorted({x.name for x in [*request.upsertions, *request.deletions]})
        return response_for(request, throttle_time_ms=0, results=[
            Result(user=u, error_code=refused[0], error_message=refused[1]) for u in users])
    if ctx.server.config.is_kraft:  # the controller writes the credential records (broker/kraft/admin.py)
        forwarded = await controller.admin.forward(request)
        if forwarded is not None:
            return forwarded
        users = sorted({x.name for x in [*request.upsertions, *request.deletions]})
        return response_for(request, throttle_time_ms=0, results=[
            Result(user=u, error_code=ErrorCode.REQUEST_TIMED_OUT, error_message="The controller could not be reached.")
            for u in users])
    results = await controller.call(_alter, CredentialStore(controller.store), list(request.upsertions),
                                    list(request.deletions))
    return response_for(request, throttle_time_ms=0, results=[
        Result(user=user, error_code=error, error_message=message) for user, error, message in results])
