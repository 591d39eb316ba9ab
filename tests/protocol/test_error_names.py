"""Every `ErrorCode.NAME` the code base writes names a real member.

An unknown member is an AttributeError at the moment the error path runs, which a handler turns into a
dropped connection (seen with INVALID_TOPIC_EXCEPTION on Metadata and CreateTopics). Error paths are the
least exercised code, so check every reference statically, including aliases (`GroupErrorCode as E`).
"""

from __future__ import annotations

import ast
from pathlib import Path

from protocol.errors import ErrorCode

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["protocol", "storage", "broker", "compat", "bench", "spark_pipeline", "tests"]
ENUM_NAMES = {"ErrorCode", "GroupErrorCode"}


def _aliases(tree: ast.Module) -> set[str]:
    names = set(ENUM_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in ENUM_NAMES and alias.asname:
                    names.add(alias.asname)
    return names


def _unknown_members(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    aliases = _aliases(tree)
    members = set(ErrorCode.__members__)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            name = node.attr
            if name.isupper() and name not in members:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{name}")
    return bad


def test_every_error_code_reference_is_a_member() -> None:
    bad: list[str] = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            bad += _unknown_members(path)
    assert not bad, "unknown ErrorCode members:\n" + "\n".join(bad)


def test_kafka_names_for_codes_that_were_misnamed() -> None:
    # Kafka's Errors enum names; handlers and docs use these.
    assert ErrorCode(17).name == "INVALID_TOPIC_EXCEPTION"
    assert ErrorCode(39).name == "INVALID_REPLICA_ASSIGNMENT"
