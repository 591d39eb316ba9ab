"""Our message and record schemas against Kafka's own, read from the jars Maven Central serves (realkafka): for
every version we define, the same fields in the same order with the same types, nullability and tags.

- The KRaft metadata records (`protocol/schemas/metadata/`, Kafka's `common/metadata/` in kafka-metadata), every
  version Kafka 4.4 defines, and the Raft control messages, against Kafka 4.4.
- The requests and responses we define ourselves (`protocol/schemas/`) against Kafka 4.4, and those Kafka 4.0
  removed (the ZooKeeper-era controller requests) against Kafka 3.7.
- The kafka-python message classes of the APIs we serve, at the versions we serve (`SUPPORTED_VERSIONS`),
  against Kafka 4.4.
A version Kafka no longer defines (e.g. AlterPartition v0-1, removed in 4.x) is compared with Kafka 3.7's.
"""

from __future__ import annotations

import json
import re
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import protocol
from protocol.api_keys import SUPPORTED_VERSIONS
from realkafka import KRAFT_KAFKA_LATEST, ZOOKEEPER_KAFKA, jars

OURS = Path(protocol.__file__).parent / "schemas"
# Field names that differ on purpose (names are not on the wire): ours for Kafka's where a field would clash with
# kafka-python's attributes (protocol/metadata_records.py, protocol/inter_broker_messages.py), and kafka-python's
# older names for fields Kafka renamed since.
RENAMED = {"RecordVersion": "Version", "RequestType": "Type", "IsKRaftController": "isKRaftController",
           "TxnOffsetCommitRequest.GenerationId": "GenerationIdOrMemberEpoch"}


def _load(text: str) -> dict[str, Any]:
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


@cache
def kafka_schemas(version: str) -> dict[str, dict[str, Any]]:
    """Kafka's JSON schemas in a release's jars, by message name."""
    out: dict[str, dict[str, Any]] = {}
    for jar in jars.jars(jars.kafka_server(version)):
        if not re.match(r"kafka-(clients|metadata)-", jar.name):
            continue
        with zipfile.ZipFile(jar) as z:
            for name in z.namelist():
                if re.match(r"common/(message|metadata)/\w+\.json$", name):
                    schema = _load(z.read(name).decode())
                    out[schema["name"]] = schema
    return out


def _versions(spec: str | None) -> range:
    if spec is None or spec == "none":
        return range(0)
    if spec.endswith("+"):
        return range(int(spec[:-1]), 1 << 15)
    low, _, high = spec.partition("-")
    return range(int(low), int(high or low) + 1)


def layout(schema: dict[str, Any], version: int) -> list[Any]:
    """The fields of a schema at one version: (name, type, nullable, tag), structs expanded."""
    structs = {s["name"]: s for s in schema.get("commonStructs", [])}

    def fields(items: list[dict[str, Any]]) -> list[Any]:
        out = []
        for f in items or []:
            if version not in _versions(f.get("versions")):
                continue
            type_ = f["type"]
            element = type_[2:] if type_.startswith("[]") else type_
            nested = f.get("fields") or structs.get(element, {}).get("fields")
            kind = ("[]" if type_.startswith("[]") else "") + ("struct" if nested else element)
            tag = f.get("tag") if version in _versions(f.get("taggedVersions")) else None
            name = RENAMED.get(f"{schema['name']}.{f['name']}") or RENAMED.get(f["name"], f["name"])
            out.append((name, kind, version in _versions(f.get("nullableVersions")),
                        tag, fields(nested) if nested else None))
        return out

    return fields(schema["fields"])


def compare(ours: dict[str, Any], versions: range) -> list[str]:
    differences = []
    for version in versions:
        kafka = next((k[ours["name"]] for k in (kafka_schemas(KRAFT_KAFKA_LATEST), kafka_schemas(ZOOKEEPER_KAFKA))
                      if ours["name"] in k and version in _versions(k[ours["name"]]["validVersions"])), None)
        if kafka is None:
            differences.append(f"{ours['name']} v{version}: Kafka {KRAFT_KAFKA_LATEST} and {ZOOKEEPER_KAFKA} "
                               "define no such version")
            continue
        if layout(ours, version) != layout(kafka, version):
            differences.append(f"{ours['name']} v{version}: {layout(ours, version)} != {layout(kafka, version)}")
        flexible = version in _versions(ours.get("flexibleVersions"))
        if flexible != (version in _versions(kafka.get("flexibleVersions"))):
            differences.append(f"{ours['name']} v{version}: flexible {flexible} differs from Kafka's")
    return differences


OUR_FILES = sorted(OURS.glob("*.json")) + sorted((OURS / "metadata").glob("*.json"))


@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_our_schema_is_kafkas(path: Path) -> None:
    ours = _load(path.read_text())
    assert compare(ours, _versions(ours["validVersions"])) == []
    if ours.get("type") == "metadata":  # every version a controller may write must be read
        assert ours["validVersions"] == kafka_schemas(KRAFT_KAFKA_LATEST)[ours["name"]]["validVersions"]


def _kafka_python_schemas() -> list[tuple[str, dict[str, Any], range]]:
    import kafka

    resources = Path(kafka.__file__).parent / "protocol" / "schemas" / "resources"
    ours = {_load(p.read_text())["name"] for p in OURS.glob("*.json")}
    out = []
    for path in sorted(resources.glob("*.json")):
        schema = _load(path.read_text())
        key = schema.get("apiKey")
        if schema["name"] in ours or schema.get("type") not in ("request", "response") or key not in SUPPORTED_VERSIONS:
            continue
        low, high = SUPPORTED_VERSIONS[key]
        served = _versions(schema["validVersions"])
        out.append((schema["name"], schema, range(max(low, served.start), min(high, served.stop - 1) + 1)))
    return out


@pytest.mark.parametrize(("name", "schema", "versions"), _kafka_python_schemas(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_the_kafka_python_schemas_we_serve_are_kafkas(name: str, schema: dict[str, Any], versions: range) -> None:
    assert compare(schema, versions) == []
