"""ApiVersions (key 18), versions 0–5.

Answers with the version ranges of the registered handler modules (`broker.apis.advertised_versions()`),
the broker's only table of what it serves, so it can never claim an API or version nobody implemented.
A request at a version outside ours never reaches this module: the server answers it in the v0 layout
with UNSUPPORTED_VERSION and only ApiVersions' own range (as Kafka does, KIP-511), so the client retries
at a version we serve.
v3+ carries the client's software name and version (KIP-511): either one not matching Kafka's pattern (letters,
digits, '-' and '.', starting and ending with a letter or digit) answers INVALID_REQUEST and no ranges.
v5 carries the cluster id and node id the client means to reach (KIP-1242, Kafka 4.4's clients send it): a
non-null ClusterId that is not this cluster's, or with a NodeId that is not this broker's, answers
REBOOTSTRAP_REQUIRED and no ranges, so the client drops its stale metadata and bootstraps again (as Kafka 4.4's
KafkaApis; a null ClusterId skips the check).
A KRaft broker leaves out the ZooKeeper-mode and controller-only APIs, any other broker the KRaft-only ones
(broker/kraft/zk_apis.py).
v3+ advertises features (KIP-584) as Kafka 3.9's brokers do:
- Supported, KRaft broker: the ranges it registers with its controller (broker/kraft/lifecycle.py
  SUPPORTED_FEATURES, which says why each): `metadata.version`, `group.version` 1 (KIP-848 consumer groups),
  `share.version` up to 2 (KIP-932 share groups, with ShareFetch/ShareAcknowledge up to Kafka 4.2's v2; level 2's
  dead-letter topics unused), `transaction.version`, `kraft.version`, `eligible.leader.replicas.version`,
  `streams.version` (its APIs not served). At request versions below 4 a feature whose lowest level is 0 is left
  out (KAFKA-17492: older clients cannot read a range starting at 0).
- Finalized, KRaft broker: the cluster's levels from the metadata image, `metadata.version` and the quorum's
  `kraft.version` included, with the image's offset as the finalized-features epoch; level 0 is left out.
- ZooKeeper mode and single node: `group.version` and `share.version` supported up to 1 and finalized at 1,
  epoch 0. Kafka 3.x's ZooKeeper
  brokers finalize no such feature; we do so that clients may use the consumer and share group protocols we
  serve. `metadata.version`, `transaction.version` and `kraft.version` stay out: they are KRaft features, and a
  ZooKeeper cluster may hold Kafka 3.x brokers that serve no transaction.version 2 requests.
"""

from __future__ import annotations

import re
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.kraft import zk_apis
from protocol.errors import ErrorCode

API_KEY = 18
MIN_VERSION = 0
MAX_VERSION = 5
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_REQUEST,
                                 ErrorCode.REBOOTSTRAP_REQUIRED)

# What a ZooKeeper-mode or single-node broker finalizes (and says it supports): the group protocols we implement,
# not the levels a KRaft broker accepts to join a Kafka 4.4 cluster (share.version 2's dead-letter topics are not
# served).
ZK_MODE_FEATURES = {"group.version": (0, 1), "share.version": (0, 1)}

TELEMETRY_APIS = frozenset({71, 72})  # GetTelemetrySubscriptions, PushTelemetry

SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: RequestContext, request: Any) -> Any:
    from broker.apis import advertised_versions

    if request.API_VERSION >= 3 and not all(
            SOFTWARE_NAME_OR_VERSION.fullmatch(value or "")
            for value in (request.client_software_name, request.client_software_version)):
        return response_for(request, error_code=ErrorCode.INVALID_REQUEST, api_keys=[], throttle_time_ms=0)
    if request.API_VERSION >= 5 and request.cluster_id is not None and (
            request.cluster_id != ctx.server.metadata_cache.cluster_id or request.node_id != ctx.server.broker_id):
        return response_for(request, error_code=ErrorCode.REBOOTSTRAP_REQUIRED, api_keys=[], throttle_time_ms=0)
    if request.API_VERSION >= 3 and ctx.connection is not None:  # what client-metrics subscriptions match on
        ctx.connection.client_software = (request.client_software_name, request.client_software_version)
    Resp = response_type(request)
    hidden = zk_apis.hidden(ctx.server.config)
    if ctx.server.metrics is None:  # no telemetry receiver: Kafka leaves KIP-714's push APIs out
        hidden = hidden | TELEMETRY_APIS
    keys = [Resp.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(advertised_versions().items()) if k not in hidden]
    if request.API_VERSION < 3:
        return response_for(request, error_code=0, api_keys=keys, throttle_time_ms=0)
    supported, finalized, epoch = features(ctx)
    level_0_readable = request.API_VERSION >= 4
    return response_for(
        request, error_code=0, api_keys=keys, throttle_time_ms=0,
        supported_features=[Resp.SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
                            for name, (lo, hi) in supported.items() if lo > 0 or level_0_readable],
        finalized_features_epoch=epoch,
        finalized_features=[Resp.FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                            for name, level in finalized.items() if level > 0])


def features(ctx: RequestContext) -> tuple[dict[str, tuple[int, int]], dict[str, int], int]:
    """(supported ranges, finalized levels, finalized-features epoch) of this broker."""
    loader = getattr(ctx.server.controller, "loader", None)
    if loader is None:
        return dict(ZK_MODE_FEATURES), {name: hi for name, (_, hi) in ZK_MODE_FEATURES.items()}, 0
    # Only a KRaft broker has a loader, and it has loaded these modules already; imported here so that a ZooKeeper-mode
    # broker's first ApiVersions does not load the KRaft image and its record schemas (issue 35).
    from broker.kraft.image import METADATA_VERSION_FEATURE
    from broker.kraft.lifecycle import SUPPORTED_FEATURES

    image = loader.image
    finalized = dict(image.features.finalized_versions)
    if image.features.metadata_version is not None:
        finalized[METADATA_VERSION_FEATURE] = image.features.metadata_version
    finalized["kraft.version"] = loader.kraft_version
    return dict(SUPPORTED_FEATURES), finalized, image.offset
