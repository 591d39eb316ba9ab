"""CreateTopics (key 19), versions 0–7.

Each topic: name validated (INVALID_TOPIC_EXCEPTION), TOPIC_ALREADY_EXISTS, partitions and replication
factor (-1 = the broker's `num.partitions` / `default.replication.factor`) or a manual assignment
(INVALID_REPLICA_ASSIGNMENT), configs validated (INVALID_CONFIG); replicas placed as Kafka's
rack-unaware round robin. `validate_only` checks everything and creates nothing. The answer waits
(up to `timeout_ms`) until the new partitions have leaders in this broker's metadata, else
REQUEST_TIMED_OUT. v5+ returns partitions, replication factor and configs (each with the source and
sensitivity DescribeConfigs reports); v7 the topic id.
Duplicate names in one request: INVALID_REQUEST for that name, as Kafka; a config with a null value:
INVALID_CONFIG "Null value not supported for topic configs: a,b". `timeout_ms` <= 0: the topics are created
and the answer, at once, is REQUEST_TIMED_OUT (Kafka's ZkAdminManager).
A request whose new topics would write more than 10,000 metadata records in Kafka's controller (a record per
topic, per partition and per config; `broker.controller.limits`) is refused whole before anything is computed:
every topic POLICY_VIOLATION "Unable to perform excessively large batch operation.", as Kafka's controller.
As Kafka's ZooKeeper mode, only the active controller creates topics: any other broker answers NOT_CONTROLLER for
every topic (admin clients send to Metadata's controller_id and retry there); auto-creation from Metadata is
not this request and works on every broker.
A client's `controller_mutation_rate` (KIP-599) is taken per created partition; from v6 a topic met with the
quota used up is refused THROTTLING_QUOTA_EXCEEDED, below v6 it is created and the answer only throttled.
With an authorizer (Kafka): CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED;
without DESCRIBE_CONFIGS on the topic, v5+ answers no configs and topic_config_error_code
TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.config.describe import describe_topic
from broker.controller import NewTopic, TopicResult
from broker.controller.limits import EXCESSIVE_BATCH, too_many_records
from broker.security.acl import AclOperation, ResourceType
from protocol.errors import ErrorCode

API_KEY = 19
MIN_VERSION = 0
MAX_VERSION = 7
ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode.NOT_CONTROLLER, ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.INVALID_REQUEST,
    ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_TOPIC_EXCEPTION,
    ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.INVALID_PARTITIONS, ErrorCode.INVALID_REPLICATION_FACTOR,
    ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.POLICY_VIOLATION,
)

ZERO_UUID = uuid.UUID(int=0)
THROTTLED = "The throttling quota has been exceeded."  # Kafka's THROTTLING_QUOTA_EXCEEDED text


def _records(server: Any, spec: NewTopic) -> int:
    """The metadata records creating `spec` writes in Kafka's controller: the topic, its partitions, its configs
    (nothing for a topic that exists: it is refused TOPIC_ALREADY_EXISTS)."""
    if spec.name in server.metadata_cache.topics:
        return 0
    partitions = len(spec.assignment) if spec.assignment else (
        spec.num_partitions if spec.num_partitions != -1 else server.config["num.partitions"])
    return 1 + max(partitions, 0) + len(spec.configs)


async def handle(ctx: RequestContext, request: Any) -> Any:
    server = ctx.server
    Resp = response_type(request)
    if server.controller is None or not server.controller.active:
        return response_for(request, throttle_time_ms=0, topics=[
            Resp.CreatableTopicResult(name=t.name, error_code=ErrorCode.NOT_CONTROLLER) for t in request.topics])
    counts = Counter(t.name for t in request.topics)
    specs = []
    results: dict[str, TopicResult] = {}
    creatable: set[str] | None = None  # None: every topic (no authorizer, or CREATE on the cluster)
    if server.authorizer is not None and not ctx.authorize_cluster(AclOperation.CREATE):
        creatable = ctx.filter_authorized(AclOperation.CREATE, ResourceType.TOPIC, counts)
    for t in request.topics:
        if counts[t.name] > 1:
            results[t.name] = TopicResult(ErrorCode.INVALID_REQUEST,
                                          f"Create topics request from client contains duplicate topic {t.name}")
            continue
        if creatable is not None and t.name not in creatable:
            results[t.name] = TopicResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            continue
        nulls = [c.name for c in (t.configs or []) if c.value is None]
        if nulls and t.name not in server.metadata_cache.topics:
            results[t.name] = TopicResult(ErrorCode.INVALID_CONFIG,
                                          f"Null value not supported for topic configs: {','.join(nulls)}")
            continue
        specs.append(NewTopic(
            t.name, t.num_partitions, t.replication_factor,
            {a.partition_index: list(a.broker_ids) for a in (t.assignments or [])},
            {c.name: c.value for c in (t.configs or [])}))
    if too_many_records(sum(_records(server, spec) for spec in specs)):
        # Kafka's controller refuses the whole operation, every topic of the request alike
        return response_for(request, throttle_time_ms=0, topics=[
            Resp.CreatableTopicResult(name=name, error_code=ErrorCode.POLICY_VIOLATION, error_message=EXCESSIVE_BATCH)
            for name in dict.fromkeys(t.name for t in request.topics)])
    validate_only = bool(getattr(request, "validate_only", False)) if request.API_VERSION >= 1 else False
    quota = ctx.mutation_quota(strict_since=6)
    admin = server.controller.admin
    if quota.active and not validate_only:
        # KIP-599: topic by topic, each creation's partitions taken from the client's mutation quota.
        for spec in specs:
            if not quota.admits():
                results[spec.name] = TopicResult(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED)
                continue
            created = await admin.create_topics([spec], validate_only=False, timeout_ms=request.timeout_ms)
            results.update(created)
            if created[spec.name].error in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT):
                quota.record(len(spec.assignment) or (spec.num_partitions if spec.num_partitions > 0
                                                      else server.config["num.partitions"]))
    else:
        results.update(await admin.create_topics(specs, validate_only=validate_only, timeout_ms=request.timeout_ms))
    out = []
    for name in dict.fromkeys(t.name for t in request.topics):
        r = results[name]
        fields: dict[str, Any] = dict(name=name, error_code=r.error, error_message=r.message)
        if request.API_VERSION >= 5:
            ok = r.error == ErrorCode.NONE
            configs_ok = ctx.authorize(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, name)
            fields.update(num_partitions=r.num_partitions if ok else -1,
                          replication_factor=r.replication_factor if ok else -1,
                          topic_id=r.topic_id or ZERO_UUID,
                          topic_config_error_code=0 if configs_ok else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if ok and configs_ok:
                fields["configs"] = [
                    Resp.CreatableTopicResult.CreatableTopicConfigs(
                        name=c.name, value=c.value, read_only=c.read_only, config_source=int(c.source),
                        is_sensitive=c.sensitive)
                    for c in describe_topic(server.config, r.configs)]
        out.append(Resp.CreatableTopicResult(**fields))
    return ctx.throttled(quota, response_for(request, throttle_time_ms=0, topics=out))
