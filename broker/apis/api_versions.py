"""ApiVersions (key 18), versions 0–4.

Answers with the version ranges of the registered handler modules (`broker.apis.advertised_versions()`),
the broker's only table of what it serves, so it can never claim an API or version nobody implemented.
A request at a version outside ours never reaches this module: the server answers it in the v0 layout
with UNSUPPORTED_VERSION and only ApiVersions' own range (as Kafka does, KIP-511), so the client retries
at a version we serve.
v3+ carries the client's software name and version (KIP-511): either one not matching Kafka's pattern (letters,
digits, '-' and '.', starting and ending with a letter or digit) answers INVALID_REQUEST and no ranges.
A KRaft broker leaves out the ZooKeeper-mode and controller-only APIs (broker/kraft/zk_apis.py).
v3+ advertises the features this broker implements (KIP-584), each supported up to the level really served and
finalized there (a KRaft broker: at the level its cluster finalized, at most ours; level 0 is left out), with
finalized-features epoch 0: `group.version` 1 (Kafka's GroupVersion GV_1, KIP-848 consumer groups) and
`share.version` 1 (KIP-932 share groups: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
v1, as Kafka 4.1 with the feature enabled).
Gaps: no `metadata.version` / `kraft.version` features.
"""

from __future__ import annotations

import re
from typing import Any

from broker.apis.base import RequestContext, response_for, response_type
from broker.kraft import zk_apis
from protocol.errors import ErrorCode

API_KEY = 18
MIN_VERSION = 0
MAX_VERSION = 4
ERRORS: tuple[ErrorCode, ...] = (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.INVALID_REQUEST)

# feature name -> (lowest supported level, the level served and finalized)
FEATURES: dict[str, tuple[int, int]] = {
    "group.version": (0, 1),
    "share.version": (0, 1),
}

SOFTWARE_NAME_OR_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: RequestContext, request: Any) -> Any:
    from broker.apis import advertised_versions

    if request.API_VERSION >= 3 and not all(
            SOFTWARE_NAME_OR_VERSION.fullmatch(value or "")
            for value in (request.client_software_name, request.client_software_version)):
        return response_for(request, error_code=ErrorCode.INVALID_REQUEST, api_keys=[], throttle_time_ms=0)
    Resp = response_type(request)
    hidden = zk_apis.ZK_BROKER_ONLY if ctx.server.config.is_kraft else ()
    keys = [Resp.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(advertised_versions().items()) if k not in hidden]
    if request.API_VERSION < 3:
        return response_for(request, error_code=0, api_keys=keys, throttle_time_ms=0)
    finalized = {name: _finalized(ctx, name, hi) for name, (_, hi) in FEATURES.items()}
    return response_for(
        request, error_code=0, api_keys=keys, throttle_time_ms=0,
        supported_features=[Resp.SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
                            for name, (lo, hi) in FEATURES.items()],
        finalized_features_epoch=0,
        finalized_features=[Resp.FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                            for name, level in finalized.items() if level > 0])


def _finalized(ctx: RequestContext, name: str, ours: int) -> int:
    """A KRaft broker's feature level is its cluster's (capped at ours); a ZooKeeper-mode broker's is ours."""
    loader = getattr(ctx.server.controller, "loader", None)
    if loader is None:
        return ours
    return min(loader.image.features.finalized_versions.get(name, 0), ours)
