"""Kafka's inter-broker protocol versions (`inter.broker.protocol.version`, `log.message.format.version`).

Contract:
- `MetadataVersion.parse(text)` accepts what Kafka's MetadataVersion.fromVersionString accepts: a full
  version with its internal version ("3.7-IV4", "0.10.0-IV1"), a release ("3.7", "0.10.2", meaning the
  release's newest production internal version), or a patch release ("3.7.1", "0.10.2.1": the patch
  part is ignored). Anything else raises ValueError with Kafka's message.
- Values are totally ordered by their position in Kafka's list, so code that picks inter-broker
  request versions can write `ibp >= MetadataVersion.parse("2.7-IV2")` or `ibp.is_alter_partition_supported`.
- `str(v)` is Kafka's canonical form ("3.7-IV4"); `v.release` the release ("3.7").
The list is Kafka 3.9's (3.7.1's plus 3.8-IV0 and 3.9-IV0, whose releases 3.9 made production), followed by
Kafka 4.x's KRaft-only versions up to 4.4-IV2 (Kafka 4.4's newest production version), which are never an
`inter.broker.protocol.version`: `parse` refuses them unless `kraft=True` (a KRaft `--release-version`).
`LATEST_PRODUCTION` is 3.7-IV4, the version this broker reports itself as in ZooKeeper mode (Kafka 3.7.1's default).
`MetadataVersion.from_feature_level(level)`: the version of a KRaft cluster's metadata.version feature level
(1 = 3.0-IV1 ... 21 = 3.9-IV0, 22 = 4.0-IV0 ... 33 = 4.4-IV2; a level above the newest known maps to the newest,
whose request versions it keeps); `v.feature_level` the other way round.
`request_versions(v)`: the highest version of each inter-broker request (controller requests, replica
fetches, controlled shutdown) a Kafka broker at `v` sends, which ours send too.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from protocol import ApiKey

# (release, internal version) in Kafka's order. Releases before 0.10.0 have no internal version.
_VERSIONS: tuple[tuple[str, str], ...] = (
    ("0.8.0", ""), ("0.8.1", ""), ("0.8.2", ""), ("0.9.0", ""),
    ("0.10.0", "IV0"), ("0.10.0", "IV1"), ("0.10.1", "IV0"), ("0.10.1", "IV1"), ("0.10.1", "IV2"),
    ("0.10.2", "IV0"), ("0.11.0", "IV0"), ("0.11.0", "IV1"), ("0.11.0", "IV2"),
    ("1.0", "IV0"), ("1.1", "IV0"), ("2.0", "IV0"), ("2.0", "IV1"), ("2.1", "IV0"), ("2.1", "IV1"), ("2.1", "IV2"),
    ("2.2", "IV0"), ("2.2", "IV1"), ("2.3", "IV0"), ("2.3", "IV1"), ("2.4", "IV0"), ("2.4", "IV1"), ("2.5", "IV0"),
    ("2.6", "IV0"), ("2.7", "IV0"), ("2.7", "IV1"), ("2.7", "IV2"), ("2.8", "IV0"), ("2.8", "IV1"),
    ("3.0", "IV0"), ("3.0", "IV1"), ("3.1", "IV0"), ("3.2", "IV0"), ("3.3", "IV0"), ("3.3", "IV1"), ("3.3", "IV2"),
    ("3.3", "IV3"), ("3.4", "IV0"), ("3.5", "IV0"), ("3.5", "IV1"), ("3.5", "IV2"), ("3.6", "IV0"), ("3.6", "IV1"),
    ("3.6", "IV2"), ("3.7", "IV0"), ("3.7", "IV1"), ("3.7", "IV2"), ("3.7", "IV3"), ("3.7", "IV4"),
    ("3.8", "IV0"), ("3.9", "IV0"),
)
# Kafka 4.x's metadata.version levels 22 to 33: KRaft only.
_KRAFT_ONLY_VERSIONS: tuple[tuple[str, str], ...] = (
    ("4.0", "IV0"), ("4.0", "IV1"), ("4.0", "IV2"), ("4.0", "IV3"), ("4.1", "IV0"), ("4.1", "IV1"),
    ("4.2", "IV0"), ("4.2", "IV1"), ("4.3", "IV0"), ("4.4", "IV0"), ("4.4", "IV1"), ("4.4", "IV2"),
)


@functools.total_ordering
@dataclass(frozen=True)
class MetadataVersion:
    ordinal: int
    release: str
    sub_version: str

    def __str__(self) -> str:
        return f"{self.release}-{self.sub_version}" if self.sub_version else self.release

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.ordinal < other.ordinal

    def is_at_least(self, other: MetadataVersion | str) -> bool:
        return self >= (other if isinstance(other, MetadataVersion) else MetadataVersion.parse(other, kraft=True))

    @property
    def feature_level(self) -> int:
        """Its metadata.version feature level (3.0-IV1 = 1); 0 or less before KRaft existed."""
        return self.ordinal - _BY_NAME["3.0-IV1"].ordinal + 1

    # The capabilities the inter-broker code chooses by (Kafka's MetadataVersion predicates).
    @property
    def is_truncation_on_fetch_supported(self) -> bool:
        return self.is_at_least("2.7-IV1")

    @property
    def is_alter_partition_supported(self) -> bool:
        return self.is_at_least("2.7-IV2")

    @property
    def is_topic_ids_supported(self) -> bool:
        return self.is_at_least("2.8-IV0")

    @property
    def is_allocate_producer_ids_supported(self) -> bool:
        return self.is_at_least("3.0-IV0")

    @property
    def is_leader_recovery_supported(self) -> bool:
        return self.is_at_least("3.2-IV0")

    @property
    def highest_record_version(self) -> int:
        """The newest record batch magic this version allows (log.message.format.version)."""
        if self < _BY_NAME["0.10.0-IV0"]:
            return 0
        if self < _BY_NAME["0.11.0-IV0"]:
            return 1
        return 2

    @staticmethod
    def parse(text: str, *, kraft: bool = False) -> MetadataVersion:
        segments = text.split(".")
        wanted = 3 if text.startswith("0.") else 2
        key = text if wanted >= len(segments) else ".".join(segments[:wanted])
        version = (_ANY_BY_NAME if kraft else _BY_NAME).get(key)
        if version is None:
            raise ValueError(f"Version {text} is not a valid version")
        return version

    @staticmethod
    def all() -> tuple[MetadataVersion, ...]:
        return _ALL

    @staticmethod
    def from_feature_level(level: int) -> MetadataVersion:
        if level < 1:
            raise ValueError(f"metadata.version feature level {level} is below 1 (3.0-IV1)")
        return _ALL[min(_BY_NAME["3.0-IV1"].ordinal + level - 1, len(_ALL) - 1)]


_ALL = tuple(MetadataVersion(i, release, sub) for i, (release, sub) in enumerate(_VERSIONS + _KRAFT_ONLY_VERSIONS))


def _names(versions: tuple[MetadataVersion, ...]) -> dict[str, MetadataVersion]:
    names = {str(v): v for v in versions}
    for v in versions:  # a bare release names its newest internal version
        names[v.release] = v
    return names


_BY_NAME = _names(_ALL[:len(_VERSIONS)])  # what inter.broker.protocol.version may be
_ANY_BY_NAME = _names(_ALL)
LATEST_KRAFT = _ALL[-1]  # 4.4-IV2

LATEST_PRODUCTION = _BY_NAME["3.7-IV4"]


# The request versions a Kafka broker sends other brokers at each inter.broker.protocol.version (its
# controller's LeaderAndIsr/UpdateMetadata/StopReplica, its replica fetcher's requests): (first IBP, version),
# newest first. Whatever the receiver's ApiVersions says, Kafka never sends more than its IBP allows.
_VERSIONS_BY_IBP: dict[int, tuple[tuple[str, int], ...]] = {
    ApiKey.LEADER_AND_ISR: (("3.4-IV0", 7), ("3.2-IV0", 6), ("2.8-IV1", 5), ("2.4-IV1", 4), ("2.4-IV0", 3),
                            ("2.2-IV0", 2), ("1.0-IV0", 1)),
    ApiKey.UPDATE_METADATA: (("3.4-IV0", 8), ("2.8-IV1", 7), ("2.4-IV1", 6), ("2.2-IV0", 5), ("1.0-IV0", 4),
                             ("0.10.2-IV0", 3), ("0.10.0-IV1", 2), ("0.9.0", 1)),
    ApiKey.STOP_REPLICA: (("3.4-IV0", 4), ("2.6-IV0", 3), ("2.4-IV1", 2), ("2.2-IV0", 1)),
    # A broker's own request to the controller (KafkaServer's controlled shutdown).
    ApiKey.CONTROLLED_SHUTDOWN: (("2.4-IV1", 3), ("2.2-IV0", 2), ("0.9.0", 1)),
    # The replica fetcher's requests to leaders (MetadataVersion.fetchRequestVersion and friends).
    ApiKey.FETCH: (("4.1-IV1", 18), ("3.9-IV0", 17), ("3.7-IV4", 16), ("3.5-IV1", 15), ("3.5-IV0", 14),
                   ("3.1-IV0", 13), ("2.7-IV1", 12), ("2.3-IV1", 11), ("2.1-IV2", 10), ("2.0-IV1", 8),
                   ("1.1-IV0", 7), ("0.11.0-IV1", 5), ("0.11.0-IV0", 4), ("0.10.1-IV1", 3), ("0.10.0-IV0", 2),
                   ("0.9.0", 1)),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (("2.8-IV0", 4), ("2.3-IV1", 3), ("2.1-IV1", 2), ("2.0-IV0", 1)),
    ApiKey.LIST_OFFSETS: (("4.2-IV1", 11), ("4.0-IV3", 10), ("3.9-IV0", 9), ("3.5-IV0", 8), ("3.0-IV1", 7),
                          ("2.8-IV0", 6), ("2.2-IV1", 5), ("2.1-IV1", 4), ("2.0-IV1", 3), ("0.11.0-IV0", 2),
                          ("0.10.1-IV2", 1)),
}


def request_versions(ibp: MetadataVersion) -> dict[int, int]:
    """The highest version of each inter-broker request a broker at `ibp` sends (absent: no cap)."""
    out = {}
    for api_key, steps in _VERSIONS_BY_IBP.items():
        out[api_key] = next((v for first, v in steps if ibp.is_at_least(first)), 0)
    return out
