"""Kafka's small text files: offset checkpoints, leader-epoch checkpoint, partition.metadata, meta.properties.

Formats (exactly Kafka's):
- ``*-offset-checkpoint`` (recovery-point, replication, log-start, cleaner): ``0\\n<count>\\n`` then one
  ``<topic> <partition> <offset>\\n`` line per partition.
- ``leader-epoch-checkpoint``: ``0\\n<count>\\n`` then ``<epoch> <start_offset>\\n`` lines.
- ``partition.metadata``: ``version: 0\\ntopic_id: <uuid>\\n`` (Kafka's Uuid text form: URL-safe base64 of the
  16 bytes, no padding).
- ``meta.properties``: Java properties, ``version=0`` with ``broker.id`` and ``cluster.id``.
Every write goes to ``<name>.tmp``, is fsynced, renamed over the target, and the directory is fsynced, so a
crash leaves either the old or the new file. A malformed file raises ``CorruptLogError`` naming it.
"""

from __future__ import annotations

import base64
import os
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from storage.errors import CorruptLogError
from storage.values import TopicPartition

CHECKPOINT_VERSION = 0
MAX_CHECKPOINT_ENTRIES = 10_000_000


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str, *, sync_dir: bool = True) -> None:
    """``<path>.tmp`` written and fsynced, renamed over ``path``, then the directory fsynced (the rename made
    durable); ``sync_dir=False`` leaves that last fsync to a caller that writes several files of one directory."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = text.encode()
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync_dir:
        fsync_dir(path.parent)


def _read_versioned_lines(path: Path) -> list[list[str]] | None:
    """Entry lines of a ``0\\n<count>\\n...`` file split on spaces, None when the file does not exist."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None
    lines = text.split("\n")
    try:
        version = int(lines[0])
        count = int(lines[1])
    except (ValueError, IndexError):
        raise CorruptLogError(f"malformed checkpoint header in {path}") from None
    if version != CHECKPOINT_VERSION:
        raise CorruptLogError(f"unsupported checkpoint version {version} in {path}")
    if not 0 <= count <= MAX_CHECKPOINT_ENTRIES or len(lines) < 2 + count:
        found = sum(1 for line in lines[2:] if line.strip())
        raise CorruptLogError(f"{path}: expected {count} entries, found {found}")
    entries = [lines[2 + i].split(" ") for i in range(count)]
    if any(line.strip() for line in lines[2 + count :]):
        raise CorruptLogError(f"trailing data after {count} entries in {path}")
    return entries


class OffsetCheckpointFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
        lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items()]
        write_atomically(self.path, "\n".join(lines) + "\n")

    def read(self) -> dict[TopicPartition, int]:
        entries = _read_versioned_lines(self.path)
        if entries is None:
            return {}
        out: dict[TopicPartition, int] = {}
        for fields in entries:
            if len(fields) != 3:
                raise CorruptLogError(f"malformed entry {' '.join(fields)!r} in {self.path}")
            try:
                out[TopicPartition(fields[0], int(fields[1]))] = int(fields[2])
            except ValueError:
                raise CorruptLogError(f"malformed entry {' '.join(fields)!r} in {self.path}") from None
        return out


class LeaderEpochCheckpointFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, entries: list[tuple[int, int]], *, sync_dir: bool = True) -> None:
        lines = [str(CHECKPOINT_VERSION), str(len(entries))] + [f"{e} {o}" for e, o in entries]
        write_atomically(self.path, "\n".join(lines) + "\n", sync_dir=sync_dir)

    def read(self) -> list[tuple[int, int]]:
        entries = _read_versioned_lines(self.path)
        if entries is None:
            return []
        out = []
        for fields in entries:
            try:
                epoch, offset = (int(f) for f in fields)
            except ValueError:
                raise CorruptLogError(f"malformed entry {' '.join(fields)!r} in {self.path}") from None
            out.append((epoch, offset))
        return out


def uuid_to_kafka_str(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def random_kafka_uuid_str() -> str:
    """A random id as Kafka's `Uuid.randomUuid()` makes one (what `kafka-storage.sh random-uuid` prints), in its
    string form: never the zero id or the metadata topic's id (1), and never starting with "-", which a command
    line would take for an option (`format --cluster-id -x...`)."""
    while True:
        value = uuid.uuid4()
        text = uuid_to_kafka_str(value)
        if value.int > 1 and not text.startswith("-"):
            return text


def uuid_from_kafka_str(text: str) -> uuid.UUID:
    text = text.strip()
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"not a Kafka Uuid: {text!r}") from None
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return uuid.UUID(bytes=raw)


class PartitionMetadataFile:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, topic_id: uuid.UUID, *, sync_dir: bool = True) -> None:
        write_atomically(self.path, f"version: 0\ntopic_id: {uuid_to_kafka_str(topic_id)}\n", sync_dir=sync_dir)

    def read(self) -> uuid.UUID | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        if fields.get("version") != "0" or "topic_id" not in fields:
            raise CorruptLogError(f"malformed partition metadata in {self.path}")
        try:
            return uuid_from_kafka_str(fields["topic_id"])
        except ValueError as e:
            raise CorruptLogError(f"{self.path}: {e}") from None


def read_properties(path: Path) -> dict[str, str] | None:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise CorruptLogError(f"malformed line {line!r} in {path}")
        props[key.strip()] = value.strip()
    return props


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    body = "".join(f"{k}={v}\n" for k, v in props.items())
    write_atomically(path, f"#\n#{stamp}\n{body}")
