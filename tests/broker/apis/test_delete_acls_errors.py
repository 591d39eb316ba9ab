"""DeleteAcls: every code of `broker.apis.delete_acls.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import delete_acls
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import acl_filter, denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DELETE_ACLS)


def send(b: Brokers, port: int | None = None) -> Any:
    return b.call(Req[3](filters=[Req.DeleteAclsFilter(**acl_filter(Req))]), port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.SECURITY_DISABLED: lambda b: send(b),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, denied(b)),
    # A KRaft broker sends it on to the controller, which has gone.
    ErrorCode.REQUEST_TIMED_OUT: lambda b: send(b, b.kraft_without_controller()),
}

test_errors = error_path_test(delete_acls, PRODUCERS)
