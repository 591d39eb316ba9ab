"""ApiVersions (key 18), versions 0–4.

Answers with the version ranges of the registered handler modules (`broker.apis.advertised_versions()`),
the broker's only table of what it serves, so it can never claim an API or version nobody implemented.
A request at a version outside ours never reaches this module: the server answers it in the v0 layout
with UNSUPPORTED_VERSION and only ApiVersions' own range (as Kafka does, KIP-511), so the client retries
at a version we serve.
Gaps: no supported/finalized features (KRaft feature levels) are advertised.
"""

from __future__ import annotations

from typing import Any

from broker.apis.base import RequestContext, response_for, response_type

API_KEY = 18
MIN_VERSION = 0
MAX_VERSION = 4


def handle(ctx: RequestContext, request: Any) -> Any:
    from broker.apis import advertised_versions

    Resp = response_type(request)
    keys = [Resp.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(advertised_versions().items())]
    return response_for(request, error_code=0, api_keys=keys, throttle_time_ms=0)
