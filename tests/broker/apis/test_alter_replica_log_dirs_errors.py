"""AlterReplicaLogDirs: every code of `broker.apis.alter_replica_log_dirs.ERRORS`, over a real socket with our
codec."""

from __future__ import annotations

from typing import Any

from broker.apis import alter_replica_log_dirs
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.ALTER_REPLICA_LOG_DIRS)
D = Req.AlterReplicaLogDir


def log_dir(b: Brokers, port: int | None = None) -> str:
    describe = request_class(ApiKey.DESCRIBE_LOG_DIRS)
    return str(b.call(describe[4](topics=None), port).results[0].log_dir)


def send(b: Brokers, path: str, topic: str, port: int | None = None) -> Any:
    return b.call(Req[2](dirs=[D(path=path, topics=[D.AlterReplicaLogDirTopic(name=topic, partitions=[0])])]),
                  port)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_TOPIC_EXCEPTION: lambda b: send(b, log_dir(b), "t" * 249),
    ErrorCode.LOG_DIR_NOT_FOUND: lambda b: send(b, "/no/such/log/dir", b.topic("log-dirs-plain")),
    ErrorCode.REPLICA_NOT_AVAILABLE: lambda b: send(b, log_dir(b, b.cluster.ports[0]),
                                                    b.led_by_other("log-dirs-on-1"), b.cluster.ports[0]),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, log_dir(b), "log-dirs-missing"),
}

PRODUCERS.update({
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: send(b, "/any/dir", "log-dirs-denied", denied(b)),
})

test_errors = error_path_test(alter_replica_log_dirs, PRODUCERS)
