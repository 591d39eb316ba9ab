"""The quorum's timing (Kafka's QuorumConfig): `controller.quorum.*` keys and their defaults.

Contract:
- `election_timeout_ms` (controller.quorum.election.timeout.ms, 1000): an unattached voter, a prospective and a
  candidate wait a random time in [timeout, 2 x timeout) (Kafka's randomElectionTimeoutMs) before the next try.
- `fetch_timeout_ms` (controller.quorum.fetch.timeout.ms, 2000): a follower that has not fetched successfully
  from its leader for this long starts an election (with a pre-vote); a leader that has not been fetched from by
  a majority of the voters for 1.5 x this long resigns (Kafka's check-quorum timer).
- `election_backoff_max_ms` (controller.quorum.election.backoff.max.ms, 1000): the cap of the binary exponential
  backoff after a lost election, and of the successors' backoff after EndQuorumEpoch.
- `request_timeout_ms` (controller.quorum.request.timeout.ms, 2000) and `retry_backoff_ms`
  (controller.quorum.retry.backoff.ms, 20): when an unanswered request is given up and when it is retried.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QuorumConfig:
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> QuorumConfig:
        """From a broker config's values (Kafka's key names; absent keys take Kafka's defaults)."""
        d = cls()

        def get(key: str, default: int) -> int:
            value = props.get(key)
            return default if value is None else int(value)

        return cls(
            election_timeout_ms=get("controller.quorum.election.timeout.ms", d.election_timeout_ms),
            fetch_timeout_ms=get("controller.quorum.fetch.timeout.ms", d.fetch_timeout_ms),
            election_backoff_max_ms=get("controller.quorum.election.backoff.max.ms", d.election_backoff_max_ms),
            request_timeout_ms=get("controller.quorum.request.timeout.ms", d.request_timeout_ms),
            retry_backoff_ms=get("controller.quorum.retry.backoff.ms", d.retry_backoff_ms),
        )
