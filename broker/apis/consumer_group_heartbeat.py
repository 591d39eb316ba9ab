"""ConsumerGroupHeartbeat (key 68), versions 0–1 — KIP-848 consumer groups.

The member's one request: joining (epoch 0; v1 members bring their own member id), heartbeating with its
member epoch and owned partitions, leaving (epoch -1; a static member's temporary leave: -2). The broker
computes the assignment with a server-side assignor (`uniform`, the default, or `range`:
`group.consumer.assignors`, the member's ServerAssignor) and reconciles each member revoke-before-assign;
the answer carries the member's epoch, the heartbeat interval (`group.consumer.heartbeat.interval.ms`) and its
assignment when asked or changed. Sessions last `group.consumer.session.timeout.ms`.
v1 adds SubscribedTopicRegex, as Kafka 4.0's coordinator reads it: RE2 syntax (Kafka compiles it with RE2/J, we
with google-re2: no lookaround, no backreferences), matching a topic when it matches the whole name, over every
topic including internal ones. A member subscribing to a regex that does not compile is refused (below) before
anything of its request applies. The group's regexes are resolved together, on the heartbeat that finds one
unresolved or the topics changed since the last resolution (Kafka: at most every 10 s, off the request path),
and every member of the group shares that resolution.
Errors, as Kafka 4.0: INVALID_REQUEST (a malformed request: no member id, no rebalance timeout or subscription
on joining, owned partitions on joining, an epoch below -2, an empty group/instance/rack id),
UNSUPPORTED_ASSIGNOR; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE as every group
API; GROUP_ID_NOT_FOUND (no such consumer group, a share group, or a classic group with members that may not be
upgraded: `group.consumer.migration.policy` without upgrades, a protocol type other than "consumer", more members
than `group.consumer.max.size`, a malformed embedded subscription), GROUP_MAX_SIZE_REACHED
(`group.consumer.max.size`), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID (a static
instance still held by a member that did not leave), FENCED_INSTANCE_ID, INVALID_REGULAR_EXPRESSION
("SubscribedTopicRegex `<regex>` is not a valid regular expression: <RE2/J's description>.", checked after the
member checks above).
With an authorizer: READ on the group, else GROUP_AUTHORIZATION_FAILED; DESCRIBE on every subscribed topic
name, else TOPIC_AUTHORIZATION_FAILED; a regex resolves only to the topics the member whose heartbeat resolved
it may DESCRIBE (Kafka 4.0, KAFKA-18813), with no error.
The group is stored in `__consumer_offsets` with Kafka's ConsumerGroup* records and survives a restart.
Migration (Kafka 4.x, `group.consumer.migration.policy`, default bidirectional): joining a classic group with
members upgrades it online, its members staying as classic members; the last member using this protocol
leaving downgrades the group back to a classic group (broker/coordinator/group/migration.py).
Gaps: served whatever
`group.coordinator.rebalance.protocols` says (Kafka 4.0 enables "consumer" by default); resolved regexes are not
stored (Kafka's ConsumerGroupRegularExpression records): a loaded group counts each regex as resolved to the
topics of its subscription it matches until a heartbeat resolves it again; RE2 accepts `\\C` and a capture
group name used twice, which RE2/J refuses.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for
from broker.coordinator.group import api as group_api
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 68
MIN_VERSION = 0
MAX_VERSION = 1
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.GROUP_ID_NOT_FOUND,
    ErrorCode.GROUP_MAX_SIZE_REACHED, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH,
    ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.FENCED_INSTANCE_ID,
    ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_REGULAR_EXPRESSION,
)


async def handle(ctx: RequestContext, request: Any) -> Any:
    refusal = _refusal(ctx, request)
    if refusal:
        return response_for(request, throttle_time_ms=0, error_code=refusal, member_epoch=0,
                            heartbeat_interval_ms=0)
    coordinator = ctx.server.group_coordinator.coordinator
    if coordinator.is_share_group(request.group_id):
        return response_for(request, throttle_time_ms=0, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                            error_message=f"Group {request.group_id} is not a consumer group.", member_epoch=0,
                            heartbeat_interval_ms=0)
    return await group_api.consumer_group_heartbeat(
        coordinator, request, request.API_VERSION, ctx.client_id or "", f"/{ctx.client_host}",
        lambda names: ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names))


def _refusal(ctx: RequestContext, request: Any) -> int:
    if ctx.server.authorizer is None:
        return ErrorCode.NONE
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    names = set(request.subscribed_topic_names or [])
    if names and len(ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)) < len(names):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return ErrorCode.NONE
