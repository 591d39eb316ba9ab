"""Metadata (key 3), versions 0–12.

Lists the live brokers, the controller, the cluster id and, for the requested topics (all topics when
the list is null; none when empty), each partition's leader, leader epoch, replicas, ISR and offline
replicas, with topic ids from v10. No broker is listed before the controller's first UpdateMetadata, as
in Kafka, and every broker id named as leader or controller is in the broker list (a leader that is not:
LEADER_NOT_AVAILABLE and -1; a controller that is not: -1); v0 lists only live replicas, with
REPLICA_NOT_AVAILABLE when some were left out. Unknown topics are auto-created when
`auto.create.topics.enable` is on and the request allows it (v4+), answering LEADER_NOT_AVAILABLE for
that round as Kafka does; otherwise UNKNOWN_TOPIC_OR_PARTITION. Invalid topic names get
INVALID_TOPIC_EXCEPTION. Topics named by id (v10+) that we do not know get UNKNOWN_TOPIC_ID.
Brokers carry their `broker.rack` (v1+).
Authorization (with an authorizer), as Kafka's KafkaApis: topics the principal may not DESCRIBE are left out
of an all-topics request and answered TOPIC_AUTHORIZATION_FAILED when named (UNKNOWN_TOPIC_ID when named by
id), without saying whether they exist; auto-creation needs CREATE on the cluster or on the topic, else
TOPIC_AUTHORIZATION_FAILED. `include_topic_authorized_operations` (v8+) and
`include_cluster_authorized_operations` (v8-v10) are answered with the operations the principal may do
(every supported one without an authorizer, as Kafka).
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.config.topics import valid_topic_name
from broker.metadata.metadata_cache import MetadataCache, PartitionMetadata
from broker.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 3
MIN_VERSION = 0
MAX_VERSION = 12
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
)
ZERO_UUID = uuid.UUID(int=0)


def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    cache = server.metadata_cache
    Resp = response_type(request)
    version = request.API_VERSION

    requested: list[str | None] | None
    by_id: dict[str, uuid.UUID] = {}
    named_by_id: dict[str, uuid.UUID] = {}
    if request.topics is None or (version == 0 and not request.topics):
        requested = None  # all topics (v0 uses an empty list for "all")
    else:
        requested = []
        for t in request.topics:
            name = t.name
            tid = getattr(t, "topic_id", None)
            if not name and tid is not None and tid != ZERO_UUID:
                name = cache.topic_name(tid)
                if name is None:
                    by_id[str(tid)] = tid
                    continue
                named_by_id[name] = tid
            requested.append(name)

    allow_auto = getattr(request, "allow_auto_topic_creation", True) if version >= 4 else True
    topics_out = []
    names = sorted(cache.topics) if requested is None else requested
    auto_create = allow_auto and server.config["auto.create.topics.enable"]
    denied: dict[str, ErrorCode] = {}
    if server.authorizer is not None:
        names, denied = _authorize_topics(ctx, names, requested is None, auto_create, named_by_id)
    to_create = []
    for name in names:
        if name is None:
            continue
        refusal = denied.get(name)
        if refusal is not None:
            topics_out.append(_topic(Resp, None if name in named_by_id else name, named_by_id.get(name),
                                     refusal, []))
            continue
        tm = cache.topics.get(name)
        if tm is None:
            if not valid_topic_name(name):
                topics_out.append(_topic(Resp, name, None, ErrorCode.INVALID_TOPIC_EXCEPTION, []))
            elif auto_create and not name.startswith("__"):
                to_create.append(name)
                topics_out.append(_topic(Resp, name, None, ErrorCode.LEADER_NOT_AVAILABLE, []))
            else:
                topics_out.append(_topic(Resp, name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []))
            continue
        parts = [_partition(Resp, cache, p, version)
                 for p in sorted(tm.partitions.values(), key=lambda pm: pm.partition)]
        topics_out.append(_topic(Resp, name, tm.topic_id, ErrorCode.NONE, parts, tm.is_internal))
    for tid in by_id.values():
        topics_out.append(_topic(Resp, None, tid, ErrorCode.UNKNOWN_TOPIC_ID, []))
    if to_create:
        server.auto_create_topics(to_create, ctx)

    cluster_operations = None
    if version >= 8:
        if getattr(request, "include_topic_authorized_operations", False):
            for t in topics_out:
                if t.error_code not in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID):
                    t.authorized_operations = ctx.authorized_operations(ResourceType.TOPIC, t.name)
        if version <= 10 and getattr(request, "include_cluster_authorized_operations", False):
            cluster_operations = (ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
                                  if ctx.authorize_cluster(AclOperation.DESCRIBE) else set())
    brokers = [Resp.MetadataResponseBroker(node_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
               for b in sorted(cache.listed_brokers(ctx.listener).values(), key=lambda b: b.broker_id)]
    return response_for(
        request, throttle_time_ms=0, brokers=brokers, cluster_id=cache.cluster_id,
        controller_id=cache.listed_controller_id(), topics=topics_out, authorized_operations=cluster_operations)


def _authorize_topics(ctx: RequestContext, names: list[str | None], all_topics: bool, auto_create: bool,
                      named_by_id: dict[str, uuid.UUID]) -> tuple[list[str | None], dict[str, ErrorCode]]:
    """(the names still to answer, name -> the refusal answered instead), as Kafka's KafkaApis: DESCRIBE
    hides topics (silently for all topics), and auto-creating one needs CREATE on the cluster or topic."""
    present = [n for n in names if n is not None]
    described = ctx.filter_authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, present)
    denied: dict[str, ErrorCode] = {}
    if all_topics:
        names = [n for n in names if n in described]
    else:
        for n in present:
            if n not in described:
                denied[n] = ErrorCode.UNKNOWN_TOPIC_ID if n in named_by_id else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    missing = [n for n in described if n not in ctx.server.metadata_cache.topics]
    if auto_create and missing and not ctx.authorize_cluster(AclOperation.CREATE):
        creatable = ctx.filter_authorized(AclOperation.CREATE, ResourceType.TOPIC, missing)
        denied.update((n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in missing if n not in creatable)
    return names, denied


def _partition(Resp: Any, cache: MetadataCache, p: PartitionMetadata, version: int) -> Any:
    """As Kafka's metadata cache answers: a leader that is not a listed broker is no leader
    (LEADER_NOT_AVAILABLE, -1); v0 lists only replicas that are alive and says REPLICA_NOT_AVAILABLE when
    it dropped some (later versions list them all, and offline_replicas names the dead ones)."""
    replicas, isr = list(p.replicas), list(p.isr)
    if version == 0:
        listed = cache.listed_brokers()
        replicas = [r for r in replicas if r in listed]
        isr = [r for r in isr if r in listed]
    leader = cache.live_leader(p)
    if leader < 0:
        error = ErrorCode.LEADER_NOT_AVAILABLE
    elif len(replicas) < len(p.replicas) or len(isr) < len(p.isr):
        error = ErrorCode.REPLICA_NOT_AVAILABLE
    else:
        error = ErrorCode.NONE
    return Resp.MetadataResponseTopic.MetadataResponsePartition(
        error_code=error, partition_index=p.partition, leader_id=leader, leader_epoch=p.leader_epoch,
        replica_nodes=replicas, isr_nodes=isr, offline_replicas=list(p.offline_replicas))


def _topic(Resp: Any, name: str | None, topic_id: uuid.UUID | None, error: ErrorCode, partitions: list,
           internal: bool = False) -> Any:
    return Resp.MetadataResponseTopic(
        error_code=error, name=name, topic_id=topic_id or ZERO_UUID, is_internal=internal,
        partitions=partitions)
