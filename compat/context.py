"""What a scenario gets: the client under test, a neutral setup client, and the target's facts.

``ctx.client`` is the adapter whose behaviour is judged. ``ctx.setup`` is a different, neutral
adapter (librdkafka when available) used only to prepare fixtures and to observe the result from
a second point of view, so a bug in the client under test cannot hide itself. Topic and group
names carry a uuid suffix so scenarios never share state.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from compat.clients.base import ClientAdapter, ConsumerHandle
from compat.model import CheckFailed, Message


class Target(Protocol):
    """A running broker or cluster under test."""

    name: str
    bootstrap: str
    cluster_size: int


@dataclass
class Context:
    target: Target
    client: ClientAdapter
    setup: ClientAdapter
    timeout_s: float = 15.0
    _cleanup: list[Callable[[], None]] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return self.target.bootstrap

    @property
    def cluster_size(self) -> int:
        return self.target.cluster_size

    def unique(self, prefix: str) -> str:
        return f"compat-{self.client.name}-{prefix}-{uuid.uuid4().hex[:10]}"

    def new_topic(self, prefix: str, partitions: int = 1, replication_factor: int = 1,
                  configs: dict[str, str] | None = None) -> str:
        """Create a topic with the setup client and wait until every partition has a leader."""
        name = self.unique(prefix)
        create = getattr(self.target, "create_topic", None)
        if create is not None:
            # Targets without CreateTopics (librdkafka's mock cluster) create topics their own way.
            create(name, partitions, replication_factor, configs)
            return name
        self.setup.create_topic(name, partitions, replication_factor, configs)
        self.wait_for_topic(name, partitions)
        return name

    def wait_for_topic(self, name: str, partitions: int, present: bool = True) -> None:
        deadline = time.monotonic() + self.timeout_s
        while True:
            view = self.setup.cluster(None)
            parts = view.topics.get(name)
            if present and parts is not None and len(parts) == partitions and all(
                    leader >= 0 for leader in parts.values()):
                return
            if not present and parts is None:
                return
            if time.monotonic() > deadline:
                state = "present" if present else "absent"
                raise CheckFailed(f"topic {name} not {state} with {partitions} partitions "
                                  f"after {self.timeout_s}s (seen: {parts})")
            time.sleep(0.1)

    def on_cleanup(self, fn: Callable[[], None]) -> None:
        self._cleanup.append(fn)

    def track(self, consumer: ConsumerHandle) -> ConsumerHandle:
        self._cleanup.append(consumer.close)
        return consumer

    def run_cleanup(self) -> None:
        while self._cleanup:
            try:
                self._cleanup.pop()()
            except Exception:  # noqa: BLE001 - cleanup is best effort; the verdict is already decided
                pass


def poll_until(consumer: ConsumerHandle, count: int, timeout_s: float) -> list[Message]:
    """Poll until at least count messages arrived or timeout; returns what arrived."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.poll(count - len(got), min(1.0, max(0.05, deadline - time.monotonic()))))
    return got


def poll_exactly(consumer: ConsumerHandle, count: int, timeout_s: float) -> list[Message]:
    got = poll_until(consumer, count, timeout_s)
    if len(got) != count:
        raise CheckFailed(f"expected {count} messages, got {len(got)} within {timeout_s}s")
    return got


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, step: Callable[[], None] | None = None
               ) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout_s}s waiting for {what}")
        if step is not None:
            step()
        else:
            time.sleep(0.1)
