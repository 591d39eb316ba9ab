"""The harness's vocabulary: verdicts, results, and the errors a scenario raises.

A scenario is a function ``(ctx) -> None``. It passes by returning, fails by raising anything
(the first line of the error becomes the verdict's detail), and is skipped by raising
:class:`Skip` with a reason. Client adapters raise :class:`NotSupported` for operations their
client library does not offer, which the runner also reports as a skip.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field


class Verdict(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


class Skip(Exception):
    """The scenario cannot run here (missing capability); the message is the reason."""


class NotSupported(Skip):
    """The client library offers no way to perform this operation."""


class NeedsEnvironment(Skip):
    """The scenario needs something this run does not have (a cluster, a jar): not a gap."""


class CheckFailed(Exception):
    """A scenario's expectation about broker behaviour did not hold."""


def check(condition: bool, message: str) -> None:
    """Raise CheckFailed(message) unless condition holds (never stripped, unlike assert)."""
    if not condition:
        raise CheckFailed(message)


@dataclass(frozen=True)
class Result:
    target: str
    client: str
    scenario: str
    verdict: Verdict
    detail: str = ""
    seconds: float = 0.0
    # A skip for want of environment (client not installed, no cluster), not a gap of broker or client.
    environmental: bool = False

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        d["seconds"] = round(self.seconds, 3)
        return d


@dataclass(frozen=True)
class Record:
    """A record to produce. partition None lets the client's partitioner choose."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    partition: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class Message:
    """A consumed record as every adapter reports it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    members: tuple[str, ...] = ()
    instance_ids: tuple[str | None, ...] = ()


@dataclass
class ClusterView:
    """What a client learned from Metadata / DescribeCluster."""

    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    controller_id: int | None = None
    cluster_id: str | None = None
    # topic -> partition -> leader id
    topics: dict[str, dict[int, int]] = field(default_factory=dict)
    # topic -> Kafka error code of a topic Metadata answered with an error; None: the adapter cannot tell
    topic_errors: dict[str, int] | None = None


def first_line(exc: BaseException) -> str:
    message = str(exc).strip()
    if not message:
        return type(exc).__name__
    return f"{type(exc).__name__}: {message.splitlines()[0]}"[:300]


class ProducerFenced(Exception):
    """A transactional producer was fenced by a newer instance with its transactional.id; the message names the
    error the client reported (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, librdkafka's _FENCED, ...)."""


class ProduceFailed(Exception):
    """The broker (or the client on its behalf) rejected a produce; ``error`` is Kafka's error name."""

    def __init__(self, error: str, detail: str = "") -> None:
        super().__init__(f"{error}: {detail}" if detail else error)
        self.error = error


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a secured target: Kafka's `security.protocol`, the CA to trust, and SASL."""
    protocol: str  # SSL, SASL_SSL, SASL_PLAINTEXT
    ca_file: str | None = None
    mechanism: str | None = None  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    username: str | None = None
    password: str | None = None

    def librdkafka(self) -> dict[str, str]:
        """The settings in librdkafka's (and Kafka's) vocabulary."""
        conf = {"security.protocol": self.protocol}
        if self.ca_file:
            conf["ssl.ca.location"] = self.ca_file
        if self.mechanism:
            conf.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username or "",
                         "sasl.password": self.password or ""})
        return conf

    def kafka_python(self) -> dict[str, object]:
        """kafka-python's and aiokafka's keyword arguments (aiokafka wants an ssl_context: see its adapter)."""
        conf: dict[str, object] = {"security_protocol": self.protocol}
        if self.ca_file:
            conf["ssl_cafile"] = self.ca_file
        if self.mechanism:
            conf.update({"sasl_mechanism": self.mechanism, "sasl_plain_username": self.username,
                         "sasl_plain_password": self.password})
        return conf

