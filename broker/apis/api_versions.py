"""ApiVersions (key 18), versions 0–4.

Answers with the version ranges of the registered handler modules (`broker.apis.advertised_versions()`),
the broker's only table of what it serves, so it can never claim an API or version nobody implemented.
A request at a version outside ours never reaches this module: the server answers it in the v0 layout
with UNSUPPORTED_VERSION and only ApiVersions' own range (as Kafka does, KIP-511), so the client retries
at a version we serve.
v3+ carries the client's software name and version (KIP-511): either one not matching Kafka's pattern (letters,
digits, '-' and '.', starting and ending with a letter or digit) answers INVALID_REQUEST and no ranges.
A KRaft broker leaves out the ZooKeeper-mode and controller-only APIs (broker/kraft/zk_apis.py).
Features (KIP-584, v3+): only those implemented, at the level implemented: `share.version` 1 (KIP-932 share
groups: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge v1, as Kafka 4.1 with the
feature enabled), supported 0-1 and finalized at 1 (epoch 0: the levels are fixed, not set by UpdateFeatures).
Gaps: the other KRaft feature levels (metadata.version, ...) are not advertised.
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

# name -> (min supported, max supported, finalized level)
FEATURES: dict[str, tuple[int, int, int]] = {"share.version": (0, 1, 1)}

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
    features: dict[str, Any] = {}
    if request.API_VERSION >= 3 and FEATURES:
        features = dict(
            supported_features=[Resp.SupportedFeatureKey(name=n, min_version=lo, max_version=hi)
                                for n, (lo, hi, _) in sorted(FEATURES.items())],
            finalized_features_epoch=0,
            finalized_features=[Resp.FinalizedFeatureKey(name=n, min_version_level=level, max_version_level=level)
                                for n, (_, _, level) in sorted(FEATURES.items())])
    return response_for(request, error_code=0, api_keys=keys, throttle_time_ms=0, **features)
