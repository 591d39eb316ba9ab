"""The leader's view of one follower of a partition (Kafka's `Replica` and its `ReplicaState`).

Contract: the leader's `Partition` keeps one `Replica` per remote replica it leads for, updated only from
that follower's fetches (`update_fetch_state`: the fetch offset is the follower's log end offset, and its
log start offset rides along) and reset when leadership changes (`reset`). `last_caught_up_time_ms` is the
last time the follower was known to hold everything the leader had (Kafka's lastCaughtUpTimeMs): the ISR
shrinks a follower whose catch-up time is older than replica.lag.time.max.ms, and a follower caught up
within it counts for the high watermark. Plain state, no I/O, no clock of its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Replica:
    """The leader's view of a follower (Kafka's `Replica` / `ReplicaState`)."""

    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_fetch_leader_log_end_offset: int = 0
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0

    def update_fetch_state(self, fetch_offset: int, log_start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int) -> None:
        # A follower is caught up at the time of a fetch if it asked for the leader's LEO; it was caught
        # up at the previous fetch if it now asks for at least what the leader's LEO was then.
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_end_offset = fetch_offset
        self.log_start_offset = log_start_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms

    def reset(self, now_ms: int, leader_end_offset: int, in_sync: bool) -> None:
        self.log_end_offset = -1
        self.log_start_offset = -1
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = now_ms if in_sync else 0
        self.last_caught_up_time_ms = now_ms if in_sync else 0
