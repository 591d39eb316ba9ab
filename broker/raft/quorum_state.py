"""`quorum-state`: the election state a Raft voter must never forget (Kafka's FileQuorumStateStore and
ElectionState).

Contract:
- The file is one line of JSON, QuorumStateData plus `data_version`, exactly as Kafka writes it:
  version 0 (kraft.version 0, static `controller.quorum.voters`) is
  `{"clusterId":"","leaderId":L,"leaderEpoch":E,"votedId":V,"appliedOffset":0,
  "currentVoters":[{"voterId":1},...],"data_version":0}` (the static voters, as ElectionState.toQuorumStateData);
  version 1 (kraft.version 1) is `{"leaderId":L,"leaderEpoch":E,"votedId":V,"votedDirectoryId":"<base64 uuid>",
  "data_version":1}` (the zero uuid `AAAAAAAAAAAAAAAAAAAAAA` when the vote named no directory).
- `write(state)` goes to `quorum-state.tmp`, is fsynced, then renamed over `quorum-state` (Kafka's
  atomicMoveWithFallback); the Raft client writes before it answers or sends anything that depends on the new
  epoch or vote, so a voter restarted at any point never votes twice in one epoch.
- `read()` returns None when there is no file; a file that is not one JSON object, lacks `data_version` or has a
  version other than 0 or 1 raises `QuorumStateError` (Kafka refuses to start on it too).
- `currentVoters` is written for Kafka's readers and never trusted on reading: the voters come from
  `controller.quorum.voters`, as in Kafka.
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from storage.checkpoints import write_atomically

QUORUM_STATE_FILE = "quorum-state"
_ZERO = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID as Kafka writes it
NO_ID = -1


class QuorumStateError(Exception):
    pass


@dataclass(frozen=True)
class ElectionState:
    """Kafka's ElectionState: the epoch, and who leads or who we voted for in it (at most one of the two is
    known to a voter: a leader is only ever recorded by a replica that did not vote, or after the vote)."""

    epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID
    voted_directory_id: uuid.UUID | None = None

    @property
    def has_leader(self) -> bool:
        return self.leader_id >= 0

    @property
    def has_voted(self) -> bool:
        return self.voted_id >= 0


def _uuid_to_json(value: uuid.UUID) -> str:
    # Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding.
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _uuid_from_json(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


class FileQuorumStateStore:
    def __init__(self, path: Path, *, data_version: int = 0, voters: frozenset[int] = frozenset()) -> None:
        """`path`: the `quorum-state` file (in `__cluster_metadata-0/`); `data_version` 0 for kraft.version 0,
        1 for kraft.version 1 (Kafka's KRaftVersion.quorumStateVersion)."""
        if data_version not in (0, 1):
            raise ValueError(f"quorum-state data_version {data_version} is not 0 or 1")
        self.path = Path(path)
        self.data_version = data_version
        self.voters = sorted(voters)

    def read(self) -> ElectionState | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        line = text.split("\n", 1)[0]
        try:
            data = json.loads(line)
        except ValueError as e:
            raise QuorumStateError(f"{self.path}: not JSON: {e}") from None
        if not isinstance(data, dict):
            raise QuorumStateError(f"{self.path}: {line!r} is not a JSON object")
        if "data_version" not in data:
            raise QuorumStateError(f"{self.path}: {line!r} has no data_version field")
        version = data["data_version"]
        if version not in (0, 1):
            raise QuorumStateError(f"{self.path}: data_version ({version}) is not within the min (0) and max (1) "
                                   "supported version")
        try:
            directory = data.get("votedDirectoryId") if version >= 1 else None
            return ElectionState(
                epoch=int(data.get("leaderEpoch", -1)),
                leader_id=int(data.get("leaderId", NO_ID)),
                voted_id=int(data.get("votedId", NO_ID)),
                voted_directory_id=_uuid_from_json(directory) if directory and directory != _ZERO else None,
            )
        except (TypeError, ValueError) as e:
            raise QuorumStateError(f"{self.path}: bad field in {line!r}: {e}") from None

    def write(self, state: ElectionState) -> None:
        data: dict[str, object]
        if self.data_version == 0:
            data = {"clusterId": "", "leaderId": state.leader_id, "leaderEpoch": state.epoch,
                    "votedId": state.voted_id, "appliedOffset": 0,
                    "currentVoters": [{"voterId": v} for v in self.voters], "data_version": 0}
        else:
            directory = state.voted_directory_id or uuid.UUID(int=0)
            data = {"leaderId": state.leader_id, "leaderEpoch": state.epoch, "votedId": state.voted_id,
                    "votedDirectoryId": _uuid_to_json(directory), "data_version": 1}
        write_atomically(self.path, json.dumps(data, separators=(",", ":")))


class MemoryQuorumStateStore:
    """The same contract without a file (Kafka's MockQuorumStateStore), for simulations that do not restart."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1
