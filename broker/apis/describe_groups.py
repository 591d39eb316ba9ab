"""DescribeGroups (key 15), versions 0–5.

State, protocol type and chosen protocol, and members (id, group.instance.id v4+, client id/host,
metadata and assignment bytes) of each group; unknown groups are described as Dead with no members,
as Kafka does. Gaps: authorized operations are not computed.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 15
MIN_VERSION = 0
MAX_VERSION = 5


async def handle(ctx: RequestContext, request: Any) -> Any:
    coordinator = ctx.server.group_coordinator.coordinator
    described = await coordinator.describe_groups(list(request.groups))
    Resp = response_type(request)
    G = Resp.DescribedGroup
    M = G.DescribedGroupMember
    groups = [G(error_code=g.error_code, group_id=g.group_id, group_state=g.group_state,
                protocol_type=g.protocol_type, protocol_data=g.protocol_data,
                members=[M(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                           client_host=m.client_host, member_metadata=m.member_metadata,
                           member_assignment=m.member_assignment) for m in g.members])
              for g in described]
    return response_for(request, throttle_time_ms=0, groups=groups)
