"""DescribeLogDirs: every code of `broker.apis.describe_log_dirs.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from broker.apis import describe_log_dirs
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.DESCRIBE_LOG_DIRS)


def dir_gone(b: Brokers) -> Any:
    # a broker of its own with a second log dir, removed under it: that dir cannot be read
    gone = Path(tempfile.mkdtemp(prefix="log-dir-gone-"))
    with b.throwaway(log_dirs=f"{tempfile.mkdtemp(prefix='log-dir-kept-')},{gone}") as other:
        shutil.rmtree(gone)
        return b.call(Req[4](topics=None), other.port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.KAFKA_STORAGE_ERROR: dir_gone,
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[4](topics=None), denied(b)),
})

test_errors = error_path_test(describe_log_dirs, PRODUCERS)
