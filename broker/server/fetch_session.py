"""Incremental fetch sessions (KIP-227): the broker remembers what a client fetches so that the client
sends, and the broker answers, only what changed.

Request `(session_id, session_epoch)`:
- epoch -1: a full, sessionless fetch (closes `session_id` if given); the response has session id 0.
- epoch 0: a full fetch that opens a new session (closing `session_id` if given); the response carries
  the new id, or 0 when the cache (`max.incremental.fetch.session.cache.slots`) is full.
- epoch > 0: an incremental fetch in session `session_id`: FETCH_SESSION_ID_NOT_FOUND if unknown,
  INVALID_FETCH_SESSION_EPOCH if the epoch is not the one expected. The request's partitions update or
  join the session, `forgotten_topics_data` leave it (from v13 matched by the topic id they joined with, so a
  deleted topic's partitions leave too); partitions of a topic id not known yet stay in the
  session (answered UNKNOWN_TOPIC_ID) until the id resolves, as Kafka's; the response lists only partitions whose data,
  high watermark, last stable offset, log start offset or error changed, and the epoch moves on.
Partitions that returned data rotate to the back of the session's order so none starves.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from storage import TopicPartition

INITIAL_EPOCH = 0
FINAL_EPOCH = -1


@dataclass
class CachedPartition:
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    high_watermark: int = -1
    last_stable_offset: int = -1
    remote_log_start_offset: int = -1
    topic_id: object = None

    def maybe_update_response(self, high_watermark: int, last_stable_offset: int, log_start_offset: int,
                              has_data_or_error: bool) -> bool:
        """Update the cached response fields; True if this partition belongs in an incremental response."""
        changed = has_data_or_error
        if self.high_watermark != high_watermark:
            self.high_watermark = high_watermark
            changed = True
        if self.last_stable_offset != last_stable_offset:
            self.last_stable_offset = last_stable_offset
            changed = True
        if self.log_start_offset != log_start_offset:
            self.log_start_offset = log_start_offset
            changed = True
        return changed


@dataclass
class FetchSession:
    session_id: int
    epoch: int
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)
    # Partitions named by a topic id this broker did not know yet, by (topic id, partition): kept, answered
    # UNKNOWN_TOPIC_ID, and moved into `partitions` once the id resolves (the client need not name them again).
    unresolved: dict[tuple[uuid.UUID, int], CachedPartition] = field(default_factory=dict)
    last_used: float = field(default_factory=time.monotonic)
    # Opened by a v13+ request (topics named by id): later requests of the session must name them the same way.
    uses_topic_ids: bool = False

    def forget(self, topic: str | None, topic_id: uuid.UUID | None, partitions: list[int]) -> None:
        """Forgotten partitions leave the session: by name below v13; from v13 by the topic id they joined with,
        not through the metadata cache, where a deleted topic's id has no name any more (its partitions would
        stay, answered with an error, and every fetch in the session would return at once)."""
        if topic_id is None:
            for p in partitions:
                self.partitions.pop(TopicPartition(topic or "", p), None)
            return
        gone = set(partitions)
        for p in gone:
            self.unresolved.pop((topic_id, p), None)
        for tp in [tp for tp, cp in self.partitions.items() if cp.topic_id == topic_id and tp.partition in gone]:
            del self.partitions[tp]

    def resolve(self, topic_name: Callable[[uuid.UUID], str | None]) -> list[tuple[uuid.UUID, int]]:
        """Move the unresolved partitions whose topic id now has a name into `partitions`; the rest remain."""
        for (tid, index), cp in list(self.unresolved.items()):
            name = topic_name(tid)
            if name is not None:
                del self.unresolved[(tid, index)]
                self.partitions.setdefault(TopicPartition(name, index), cp)
        return list(self.unresolved)


class FetchSessionError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class FetchSessionCache:
    def __init__(self, max_slots: int, eviction_ms: int = 120_000) -> None:
        self.max_slots = max_slots
        self.eviction_s = eviction_ms / 1000
        self.sessions: dict[int, FetchSession] = {}

    def new_session(self, uses_topic_ids: bool) -> FetchSession | None:
        self._evict()
        if len(self.sessions) >= self.max_slots:
            return None
        while True:
            sid = random.randint(1, 2**31 - 1)
            if sid not in self.sessions:
                break
        session = FetchSession(sid, 1, uses_topic_ids=uses_topic_ids)
        self.sessions[sid] = session
        return session

    def get(self, session_id: int, epoch: int, uses_topic_ids: bool) -> FetchSession:
        """The session an incremental request continues, as Kafka's FetchManager checks it: known, at the
        request's epoch, and named by topic id (v13+) exactly when it was opened that way."""
        from protocol.errors import ErrorCode

        session = self.sessions.get(session_id)
        if session is None:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            raise FetchSessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.last_used = time.monotonic()
        return session

    def remove(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)

    def _evict(self) -> None:
        if len(self.sessions) < self.max_slots:
            return
        deadline = time.monotonic() - self.eviction_s
        for sid, s in list(self.sessions.items()):
            if s.last_used < deadline:
                del self.sessions[sid]


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1
