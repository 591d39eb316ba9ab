"""`python -m broker format --cluster-id ID (--config F | --override k=v ...) [--ignore-formatted]`:
Kafka's `kafka-storage.sh format` for a KRaft broker of ours.

Contract (Kafka 3.9's StorageTool and Formatter):
- Refused for a configuration without `process.roles` ("appears to be for a legacy cluster").
- Every log dir and the metadata log dir (`metadata.log.dir`, else the first log dir) gets `meta.properties`
  version 1 (`cluster.id`, `node.id`, `directory.id`: a random Uuid whose Kafka text form does not start
  with '-' and that is not one of the reserved directory ids) and `bootstrap.checkpoint` (a snapshot
  holding the FeatureLevelRecord of `metadata.version`: `--release-version`, else
  `inter.broker.protocol.version` when set, else Kafka 3.7's 3.7-IV4), then a FeatureLevelRecord per `--feature
  NAME=LEVEL` (Kafka's `--feature`; no release defaults are added for other features). A controller of ours
  (process.roles=controller, broker/quorum/) appends these records at the start of a fresh metadata log.
- A dir already holding `meta.properties` is refused ("Log directory D is already formatted. Use
  --ignore-formatted ...") unless `--ignore-formatted`, which skips it; its cluster.id/node.id must still
  match. One "Formatting ..." line per formatted dir, as Kafka prints them.
Returns the exit code (0, or 1 with one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

from broker.common.metadata_version import LATEST_KRAFT, MetadataVersion
from broker.config.kafka_config import ConfigError, KafkaConfig
from broker.kraft.snapshot import write_snapshot
from protocol.metadata_records import FeatureLevelRecord
from storage.checkpoints import read_properties, uuid_from_kafka_str, uuid_to_kafka_str, write_properties
from storage.snapshot_file import BOOTSTRAP_FILE, SnapshotId

META_PROPERTIES = "meta.properties"
_LEVEL_1 = MetadataVersion.parse("3.0-IV1")  # metadata.version feature level 1 (Kafka's MINIMUM_KRAFT_VERSION)


class FormatterError(Exception):
    pass


def feature_level(version: MetadataVersion | str) -> int:
    """metadata.version's feature level of a release (3.0-IV1 = 1, 3.3-IV0 = 4, 3.7-IV4 = 19, 3.9-IV0 = 21,
    4.0-IV3 = 25, 4.1-IV1 = 27, 4.4-IV2 = 33); text is parsed as Kafka's MetadataVersion.fromVersionString does."""
    if isinstance(version, str):
        try:
            version = MetadataVersion.parse(version, kraft=True)
        except ValueError as e:
            raise FormatterError(str(e)) from None
    if version < _LEVEL_1:
        raise FormatterError(f"metadata.version {version} is below the lowest KRaft version 3.0-IV1")
    return version.feature_level


def feature_release(level: int) -> str:
    """The metadata.version of a feature level ("3.7-IV4" for 19, "4.1-IV1" for 27), or the level itself when
    unknown here."""
    if not 1 <= level <= LATEST_KRAFT.feature_level:
        return str(level)
    return str(MetadataVersion.from_feature_level(level))


def formatted_properties(directory: Path, node_id: int, error: type[Exception]) -> dict[str, str]:
    """The `meta.properties` of a formatted directory of node `node_id`, or `error` with Kafka's start-up message
    (an unformatted directory, another node's)."""
    props = read_properties(directory / META_PROPERTIES)
    if props is None:
        raise error(f"No `meta.properties` found in {directory} (have you run `python -m broker format` "
                    "(or `kafka-storage.sh format`) to format the directory?)")
    if props.get("node.id") != str(node_id):
        raise error(f"Stored node id {props.get('node.id')} in {directory} doesn't match the configured "
                    f"node id {node_id}")
    return props


def new_directory_id(taken: set[uuid.UUID]) -> uuid.UUID:
    """Kafka's generateValidDirectoryId: random, not reserved (the first 100 ids), text form without '-'."""
    while True:
        candidate = uuid.uuid4()
        if candidate.int >> 64 == 0 and (candidate.int & ((1 << 64) - 1)) < 100:
            continue
        if uuid_to_kafka_str(candidate).startswith("-") or candidate in taken:
            continue
        return candidate


def format_dirs(config: KafkaConfig, cluster_id: str, *, ignore_formatted: bool = False,
                release_version: str | None = None, features: dict[str, int] | None = None,
                out: object = sys.stdout) -> list[Path]:
    """Format the config's dirs; returns those written."""
    if not config.is_kraft:
        raise FormatterError("The kafka configuration file appears to be for a legacy cluster. "
                             "Formatting is only supported for clusters in KRaft mode.")
    if not cluster_id:
        raise FormatterError("You must specify the cluster id.")
    version_text = release_version or config.originals.get("inter.broker.protocol.version") or "3.7-IV4"
    level = feature_level(version_text)
    node_id = config["node.id"]
    dirs = list(dict.fromkeys([*config.log_dirs, config.metadata_log_dir]))
    formatted: dict[Path, dict[str, str]] = {}
    for d in dirs:
        props = read_properties(d / META_PROPERTIES)
        if props is not None:
            formatted[d] = props
    for d, props in formatted.items():  # Kafka's MetaPropertiesEnsemble.verify
        if props.get("cluster.id") not in (None, cluster_id):
            raise FormatterError(f"Invalid cluster.id in: {d / META_PROPERTIES}. Expected {cluster_id}, but "
                                 f"read {props.get('cluster.id')}")
        stored = props.get("node.id", props.get("broker.id"))
        if stored is not None and stored != str(node_id):
            raise FormatterError(f"Stored node id {stored} doesn't match previous node id {node_id} in "
                                 f"{d / META_PROPERTIES}. If you moved your data, make sure your configured node "
                                 "id matches. If you intend to create a new node, you should remove all data in "
                                 "your data directories.")
    if formatted and not ignore_formatted:
        raise FormatterError(f"Log directory {next(iter(formatted))} is already formatted. "
                             "Use --ignore-formatted to ignore this directory and format the others.")
    empty = [d for d in dirs if d not in formatted]
    if not empty:
        print("All of the log directories are already formatted.", file=out)  # type: ignore[arg-type]
        return []
    taken = {uuid.UUID(int=0)}
    for props in formatted.values():
        if props.get("directory.id"):
            taken.add(uuid_from_kafka_str(props["directory.id"]))
    now_ms = int(time.time() * 1000)
    for d in empty:
        kind = "metadata log directory" if d == config.metadata_log_dir else "data directory"
        print(f"Formatting {kind} {d} with metadata.version {feature_release(level)}.", file=out)  # type: ignore[arg-type]
        d.mkdir(parents=True, exist_ok=True)
        directory_id = new_directory_id(taken)
        taken.add(directory_id)
        bootstrap = d / BOOTSTRAP_FILE
        if not bootstrap.exists():
            records = [FeatureLevelRecord(name="metadata.version", feature_level=level, version=0)]
            records += [FeatureLevelRecord(name=name, feature_level=value, version=0)
                        for name, value in sorted((features or {}).items())]
            write_snapshot(d, SnapshotId(0, 0), records,
                           last_contained_log_timestamp=now_ms, timestamp_ms=now_ms, final_path=bootstrap)
        write_properties(d / META_PROPERTIES, {
            "version": "1", "cluster.id": cluster_id, "node.id": str(node_id),
            "directory.id": uuid_to_kafka_str(directory_id)})
    return empty


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker format",
                                     description="Format the log dirs of a KRaft broker (kafka-storage.sh format)")
    parser.add_argument("--cluster-id", "-t", required=True)
    parser.add_argument("--config", "-c")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--ignore-formatted", "-g", action="store_true")
    parser.add_argument("--release-version", "-r")
    parser.add_argument("--feature", "-f", action="append", default=[], metavar="NAME=LEVEL",
                        help="a finalized feature level besides metadata.version (repeatable)")
    args = parser.parse_args(argv)
    try:
        features = {}
        for text in args.feature:
            name, eq, value = text.partition("=")
            if not eq or not value.strip().lstrip("-").isdigit():
                raise FormatterError(f"Can't parse feature={text}. The feature must be in the form NAME=LEVEL")
            if name.strip() == "metadata.version":
                raise FormatterError("Use --release-version instead of --feature with metadata.version")
            features[name.strip()] = int(value)
        config = KafkaConfig.load(args.config, args.override)
        format_dirs(config, args.cluster_id, ignore_formatted=args.ignore_formatted,
                    release_version=args.release_version, features=features)
    except (ConfigError, FormatterError) as e:
        print(f"Error while formatting: {e}" if isinstance(e, FormatterError) else f"configuration error: {e}",
              file=sys.stderr)
        return 1
    return 0
