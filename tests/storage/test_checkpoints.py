"""Checkpoint files in Kafka's text formats, written atomically."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from storage import CorruptLogError, LeaderEpochCheckpointFile, OffsetCheckpointFile, PartitionMetadataFile
from storage.checkpoints import read_properties, uuid_from_kafka_str, uuid_to_kafka_str, write_properties
from storage.values import TopicPartition


def test_offset_checkpoint_format_field_by_field(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    OffsetCheckpointFile(path).write({TopicPartition("my-topic", 0): 42, TopicPartition("other", 11): 7})
    assert path.read_text() == "0\n2\nmy-topic 0 42\nother 11 7\n"
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()
    assert OffsetCheckpointFile(path).read() == {TopicPartition("my-topic", 0): 42, TopicPartition("other", 11): 7}


def test_offset_checkpoint_reads_kafka_written_file(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("0\n3\n__consumer_offsets 12 0\nt 0 100\nt 1 200\n")
    assert OffsetCheckpointFile(path).read() == {
        TopicPartition("__consumer_offsets", 12): 0,
        TopicPartition("t", 0): 100,
        TopicPartition("t", 1): 200,
    }


def test_offset_checkpoint_missing_is_empty(tmp_path: Path) -> None:
    assert OffsetCheckpointFile(tmp_path / "nope").read() == {}


@pytest.mark.parametrize(
    "text",
    ["1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt 0\n", "0\n1\nt x 1\n", "garbage", "0\n-1\n", "0\n1\nt 0 1\nextra 1 1\n"],
)
def test_offset_checkpoint_malformed_raises_typed_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptLogError):
        OffsetCheckpointFile(path).read()


def test_leader_epoch_checkpoint_format(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    LeaderEpochCheckpointFile(path).write([(0, 0), (3, 150)])
    assert path.read_text() == "0\n2\n0 0\n3 150\n"
    assert LeaderEpochCheckpointFile(path).read() == [(0, 0), (3, 150)]


def test_partition_metadata_uses_kafka_uuid_text(tmp_path: Path) -> None:
    topic_id = uuid.UUID("9f1e37d3-1c6a-4e12-8c54-3b0a8f2a1d77")
    path = tmp_path / "partition.metadata"
    PartitionMetadataFile(path).write(topic_id)
    text = path.read_text()
    assert text.startswith("version: 0\ntopic_id: ")
    encoded = text.split("topic_id: ")[1].strip()
    assert len(encoded) == 22 and "=" not in encoded  # URL-safe base64 without padding, as Kafka's Uuid
    assert PartitionMetadataFile(path).read() == topic_id


def test_kafka_uuid_known_value() -> None:
    # Kafka's Uuid.toString of (msb=0, lsb=1) is "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_to_kafka_str(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_from_kafka_str("AAAAAAAAAAAAAAAAAAAAAQ") == uuid.UUID(int=1)


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "meta.properties"
    write_properties(path, {"version": "0", "broker.id": "3", "cluster.id": "abc"})
    assert read_properties(path) == {"version": "0", "broker.id": "3", "cluster.id": "abc"}
    assert path.read_text().startswith("#\n#")


def test_random_kafka_uuids_never_start_with_a_dash() -> None:
    """Kafka's Uuid.randomUuid() never gives an id a command line would take for an option (one in 64 base64 strings
    starts with "-": `kafka-storage format --cluster-id -x...` failed), nor the zero or metadata-topic id."""
    from storage.checkpoints import random_kafka_uuid_str, uuid_from_kafka_str, uuid_to_kafka_str

    ids = [random_kafka_uuid_str() for _ in range(5000)]
    assert not any(text.startswith("-") for text in ids)
    assert all(uuid_to_kafka_str(uuid_from_kafka_str(text)) == text and len(text) == 22 for text in ids)
    assert len(set(ids)) == len(ids)
