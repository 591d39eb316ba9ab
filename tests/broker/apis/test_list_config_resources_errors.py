"""ListConfigResources: every code of `broker.apis.list_config_resources.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from broker.apis import list_config_resources
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Producer, error_path_test

Req = request_class(ApiKey.LIST_CLIENT_METRICS_RESOURCES)

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[0](), denied(b)),
    ErrorCode.UNSUPPORTED_VERSION: lambda b: b.call(Req[1](resource_types=[1])),  # 1: not a config resource type
}

test_errors = error_path_test(list_config_resources, PRODUCERS)
