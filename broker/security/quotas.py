"""Client quotas as Kafka's ClientQuotaManager: byte rates per user and client id, with Kafka's precedence,
kept in the metadata store in Kafka's ZooKeeper layout.

Contract:
- Entities: a user, a client id, or both; each may be `<default>` (the entity's name in the store; null in
  the APIs). Quotas `producer_byte_rate`, `consumer_byte_rate`, `request_percentage`,
  `controller_mutation_rate`, all enforced (broker.apis.base.RequestContext.record_quota,
  record_request_time, mutation_quota; see docs/security.md).
- `controller_mutation_rate` (KIP-599) is a token bucket, as Kafka's: a burst of rate x quota.window.num x
  quota.window.size.seconds partitions, refilled at the rate; `MutationQuota` is one request's view of it —
  strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+: a topic met with an empty bucket is
  refused THROTTLING_QUOTA_EXCEEDED) or permissive (older versions: recorded, only throttled).
- Store (`QuotaStore`, blocking — call it off the event loop): `/config/users/<user>`,
  `/config/users/<user>/clients/<client>`, `/config/clients/<client>` hold ``{"version":1,"config":{...}}``
  with a ``/config/changes`` notification, as Kafka's AdminZkClient. A user's node also holds its SCRAM
  credentials: quota writes keep every other key, and the SCRAM writes (broker.security.credentials) keep
  the quotas.
- Which quota applies to a request (`QuotaManager.quota_for`): the first of Kafka's eight levels that has one —
  user+client, user+<default> client, user, <default> user+client, <default> user+<default> client,
  <default> user, client, <default> client. The rate is measured per the entity of that level (a user-level
  quota is shared by all the user's clients), over `quota.window.num` windows of
  `quota.window.size.seconds`, as Kafka's Rate.
- `record(...)` adds a request's bytes and returns how long to throttle (ms): 0 within the quota, else
  Kafka's (rate - quota) / quota x the measured window, capped at the whole window span.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from broker.config.dynamic_store import watch_config_changes, write_entity_config
from broker.metadata import znodes
from broker.security.credentials import desanitize, sanitize

log = logging.getLogger("broker.security")

DEFAULT = "<default>"
PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
QUOTA_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE)
USER, CLIENT_ID = "user", "client-id"

# (user, client id) of a stored entity: a name, DEFAULT, or None when the entity has no such part.
Entity = tuple[str | None, str | None]


def entity_path(entity: Entity) -> tuple[str, str]:
    """(kind, sanitized entity path under /config/<kind>/) of a quota entity."""
    user, client = entity
    if user is not None:
        name = user if user == DEFAULT else sanitize(user)
        if client is None:
            return "users", name
        return "users", f"{name}/clients/{client if client == DEFAULT else sanitize(client)}"
    assert client is not None
    return "clients", client if client == DEFAULT else sanitize(client)


def _name(text: str) -> str:
    return text if text == DEFAULT else desanitize(text)


class QuotaStore:
    def __init__(self, store: Any) -> None:
        self._tree = store._tree  # both engines (ZooKeeper, local file) implement the same znode tree

    def _config(self, path: str) -> dict[str, str]:
        node = self._tree.get(path)
        return {} if node is None else znodes.decode_topic_config(path, node[0])

    def read_all(self) -> dict[Entity, dict[str, float]]:
        out: dict[Entity, dict[str, float]] = {}
        for user in self._tree.children("/config/users") or []:
            self._add(out, (_name(user), None), f"/config/users/{user}")
            for client in self._tree.children(f"/config/users/{user}/clients") or []:
                self._add(out, (_name(user), _name(client)), f"/config/users/{user}/clients/{client}")
        for client in self._tree.children("/config/clients") or []:
            self._add(out, (None, _name(client)), f"/config/clients/{client}")
        return out

    def _add(self, out: dict[Entity, dict[str, float]], entity: Entity, path: str) -> None:
        quotas = {k: float(v) for k, v in self._config(path).items() if k in QUOTA_KEYS}
        if quotas:
            out[entity] = quotas

    def alter(self, entity: Entity, upserts: Mapping[str, float], removals: Iterable[str]) -> None:
        kind, path = entity_path(entity)
        config = self._config(f"/config/{kind}/{path}")
        for key in removals:
            config.pop(key, None)
        # As Kafka writes them: the byte rates (LONG) as whole numbers, the others as Java prints a double.
        config.update({k: str(int(v)) if k in (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE) else repr(float(v))
                       for k, v in upserts.items()})
        write_entity_config(self._tree, kind, path, config)


@dataclass
class _Rate:
    """Kafka's Rate over sampled windows: the sum of the samples over the time they span (at least all but the
    current window)."""
    window_ms: int
    samples: int
    starts: list[float] = field(default_factory=list)
    totals: list[float] = field(default_factory=list)

    def record(self, value: float, now_ms: float) -> None:
        if not self.starts or now_ms - self.starts[-1] >= self.window_ms:
            self.starts.append(now_ms)
            self.totals.append(0.0)
            if len(self.starts) > self.samples:
                del self.starts[0], self.totals[0]
        self.totals[-1] += value

    def window_ms_at(self, now_ms: float) -> float:
        self._purge(now_ms)
        elapsed = now_ms - self.starts[0] if self.starts else 0.0
        return max(elapsed, (self.samples - 1) * self.window_ms) or self.window_ms

    def rate(self, now_ms: float) -> float:
        window = self.window_ms_at(now_ms)
        return sum(self.totals) / (window / 1000)

    def _purge(self, now_ms: float) -> None:
        while self.starts and now_ms - self.starts[0] >= self.samples * self.window_ms:
            del self.starts[0], self.totals[0]


@dataclass
class _TokenBucket:
    rate: float  # tokens (partition mutations) per second
    burst: float
    tokens: float
    last_ms: float

    def refill(self, now_ms: float) -> None:
        self.tokens = min(self.burst, self.tokens + self.rate * (now_ms - self.last_ms) / 1000)
        self.last_ms = now_ms

    def throttle_ms(self, now_ms: float) -> int:
        self.refill(now_ms)
        return max(0, round(-self.tokens / self.rate * 1000)) if self.rate > 0 else 0


class MutationQuota:
    """One request's controller mutation quota (Kafka's Strict/PermissiveControllerMutationQuota)."""

    def __init__(self, bucket: _TokenBucket | None, strict: bool) -> None:
        self._bucket = bucket
        self.strict = strict
        self.throttle_ms = 0

    @property
    def active(self) -> bool:
        return self._bucket is not None

    def admits(self) -> bool:
        """Strict: False (and the throttle noted) while the bucket is empty."""
        if self._bucket is None or not self.strict:
            return True
        throttle = self._bucket.throttle_ms(time.time() * 1000)
        self.throttle_ms = max(self.throttle_ms, throttle)
        return throttle == 0

    def record(self, permits: float) -> None:
        if self._bucket is None:
            return
        now = time.time() * 1000
        self._bucket.refill(now)
        self._bucket.tokens -= permits
        if not self.strict:
            self.throttle_ms = max(self.throttle_ms, self._bucket.throttle_ms(now))


class QuotaManager:
    """The quotas in force and the measured rates; lives on the event loop."""

    def __init__(self, window_num: int, window_size_s: int) -> None:
        self.window_ms = window_size_s * 1000
        self.samples = window_num
        self.quotas: dict[Entity, dict[str, float]] = {}
        self._rates: dict[tuple[str, str, str], _Rate] = {}
        self._buckets: dict[tuple[str, str], _TokenBucket] = {}

    def replace(self, quotas: dict[Entity, dict[str, float]]) -> None:
        self.quotas = quotas
        self._rates.clear()
        self._buckets.clear()

    def mutation_quota(self, user: str, client_id: str, strict: bool) -> MutationQuota:
        found = self.quota_for(CONTROLLER_MUTATION_RATE, user, client_id)
        if found is None:
            return MutationQuota(None, strict)
        rate, metric = found
        bucket = self._buckets.get(metric)
        if bucket is None or bucket.rate != rate:
            burst = rate * self.samples * self.window_ms / 1000
            bucket = self._buckets[metric] = _TokenBucket(rate, burst, burst, time.time() * 1000)
        return MutationQuota(bucket, strict)

    def quota_for(self, quota: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """(bound, the metric entity whose rate it bounds) by Kafka's precedence, or None when unbounded."""
        levels: list[tuple[Entity, tuple[str, str]]] = [
            ((user, client_id), (user, client_id)), ((user, DEFAULT), (user, client_id)), ((user, None), (user, "")),
            ((DEFAULT, client_id), (user, client_id)), ((DEFAULT, DEFAULT), (user, client_id)),
            ((DEFAULT, None), (user, "")), ((None, client_id), ("", client_id)), ((None, DEFAULT), ("", client_id)),
        ]
        for entity, metric in levels:
            bound = self.quotas.get(entity, {}).get(quota)
            if bound is not None:
                return bound, metric
        return None

    def record(self, quota: str, user: str, client_id: str, value: float, now_ms: float | None = None) -> int:
        found = self.quota_for(quota, user, client_id)
        if found is None:
            return 0
        bound, metric = found
        now_ms = time.time() * 1000 if now_ms is None else now_ms
        rate = self._rates.get((quota, *metric))
        if rate is None:
            rate = self._rates[(quota, *metric)] = _Rate(self.window_ms, self.samples)
        rate.record(value, now_ms)
        measured = rate.rate(now_ms)
        if bound <= 0 or measured <= bound:
            return 0 if bound > 0 else self.samples * self.window_ms
        throttle = (measured - bound) / bound * rate.window_ms_at(now_ms)
        return int(min(round(throttle), self.samples * self.window_ms))


class ClientQuotas(QuotaManager):
    """The broker's quotas: loaded from the store at start-up and again on every users/clients change
    notification (from any broker, `kafka-configs.sh` or our AlterClientQuotas)."""

    def __init__(self, window_num: int, window_size_s: int) -> None:
        super().__init__(window_num, window_size_s)
        self._store: QuotaStore | None = None
        self._watches: list[Any] = []

    async def startup(self, metadata_store: Any) -> None:
        loop = asyncio.get_running_loop()
        self._store = QuotaStore(metadata_store)
        tree = metadata_store._tree
        self._watches = [watch_config_changes(tree, kind, lambda _path: self._reload(), loop.call_soon_threadsafe)
                         for kind in ("users", "clients")]
        await self._load()

    def _reload(self) -> None:
        asyncio.ensure_future(self._load())

    async def _load(self) -> None:
        assert self._store is not None
        quotas = await asyncio.to_thread(self._store.read_all)
        if quotas != self.quotas:
            log.info("client quotas: %s", {entity_path(e)[1] if e != (None, None) else "": q
                                           for e, q in sorted(quotas.items(), key=str)} or "none")
            self.replace(quotas)

    def shutdown(self) -> None:
        for watch in self._watches:
            watch.close()
        self._watches = []
