"""LogManager: log dirs, checkpoints, clean-shutdown marker, placement, deletion, meta.properties, locking."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from records import batch_headers as iter_batches
from storage import KafkaStorageError, LogConfig, LogManager, TopicPartition
from storage.checkpoints import PartitionMetadataFile

from .conftest import build_batch

CFG = LogConfig(segment_bytes=2048, index_interval_bytes=256, segment_index_bytes=4096)
NOW = 1_700_000_000_000


def _fill(mgr: LogManager, tp: TopicPartition, batches: int) -> None:
    lg = mgr.get_or_create_log(tp)
    for i in range(batches):
        lg.append_as_leader(build_batch(3, value_size=30, seed=i), 0, now_ms=NOW)


def test_startup_shutdown_round_trip(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    mgr = LogManager(dirs, CFG)
    mgr.startup()
    tps = [TopicPartition("orders", p) for p in range(4)]
    for tp in tps:
        _fill(mgr, tp, 20)
    # placement: the dir with fewest partitions
    assert sorted(len(list(d.glob("orders-*"))) for d in dirs) == [2, 2]
    mgr.get_log(tps[0]).maybe_increment_log_start_offset(40)
    mgr.checkpoint_high_watermarks({tp: 55 for tp in tps})
    mgr.shutdown()
    for d in dirs:
        assert (d / ".kafka_cleanshutdown").exists()
        text = (d / "recovery-point-offset-checkpoint").read_text().splitlines()
        assert text[:2] == ["0", "2"] and all(line.endswith(" 60") for line in text[2:])
    mgr2 = LogManager(dirs, CFG)
    mgr2.startup()
    assert not any((d / ".kafka_cleanshutdown").exists() for d in dirs)
    assert {lg.topic_partition for lg in mgr2.all_logs()} == set(tps)
    assert mgr2.get_log(tps[0]).log_start_offset == 40
    assert mgr2.get_log(tps[1]).log_end_offset == 60
    assert mgr2.read_high_watermarks() == {tp: 55 for tp in tps}
    mgr2.shutdown()


def test_topic_with_dashes_and_topic_configs(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG, topic_configs=lambda t: {"retention.ms": "1234"} if t == "a-b-c" else {})
    mgr.startup()
    lg = mgr.get_or_create_log(TopicPartition("a-b-c", 12))
    assert lg.dir.name == "a-b-c-12" and lg.config.retention_ms == 1234
    mgr.shutdown()
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    assert mgr.get_log(TopicPartition("a-b-c", 12)) is not None
    mgr.shutdown()


def test_damaged_partition_does_not_stop_startup(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    good, bad = TopicPartition("good", 0), TopicPartition("bad", 0)
    _fill(mgr, good, 10)
    _fill(mgr, bad, 10)
    for lg in mgr.all_logs():
        lg.flush()
    mgr.checkpoint_recovery_points()
    bad_log = mgr.get_log(bad).segments[0].log_path
    for lg in mgr.all_logs():
        lg.close_handles()  # crash: no clean shutdown marker
    for fd in mgr._lock_fds:  # the crashed process's locks die with it
        os.close(fd)
    data = bytearray(bad_log.read_bytes())
    second = iter_batches(bytes(data))[1][0]
    data[second + 70] ^= 0xFF
    bad_log.write_bytes(data)
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    assert mgr.get_log(good).log_end_offset == 30
    assert mgr.get_log(bad).log_end_offset == 3
    assert mgr.get_log(good).read(0, 1 << 20).records.length > 0
    mgr.shutdown()


def test_deleted_log_directory_is_removed_once_file_delete_delay_has_passed(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    tp = TopicPartition("gone", 0)
    _fill(mgr, tp, 3)
    delay = mgr.get_log(tp).config.file_delete_delay_ms
    mgr.delete_log(tp, now_ms=1_000_000)
    mgr.remove_deleted_logs(now_ms=1_000_000 + delay - 1)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    mgr.remove_deleted_logs(now_ms=1_000_000 + delay)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("gone-")]
    mgr.shutdown()


def test_delete_log_renames_and_startup_removes(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    tp = TopicPartition("gone", 0)
    _fill(mgr, tp, 3)
    mgr.delete_log(tp)
    assert mgr.get_log(tp) is None
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    mgr.shutdown()
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith("-delete")]
    assert mgr.get_log(tp) is None
    mgr.shutdown()


def test_meta_properties(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.write_meta_properties(1, "cluster-x")
    props = mgr.read_meta_properties()[0]
    assert props == {"version": "0", "broker.id": "1", "cluster.id": "cluster-x"}
    mgr.write_meta_properties(1, "cluster-x")
    with pytest.raises(KafkaStorageError):
        mgr.write_meta_properties(2, "cluster-x")


def test_log_dir_lock(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    with pytest.raises(KafkaStorageError):
        LogManager([tmp_path], CFG).startup()
    mgr.shutdown()


def test_topic_id_written_to_partition_metadata(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    tid = uuid.uuid4()
    lg = mgr.get_or_create_log(TopicPartition("t", 0), topic_id=tid)
    # Kafka's flush-metadata-file: recorded at creation, written off the caller's thread (here: by hand)
    assert lg.topic_id == tid and lg.has_unflushed_metadata
    assert not (lg.dir / "partition.metadata").exists()
    lg.flush_metadata_files()
    assert (lg.dir / "partition.metadata").read_text().startswith("version: 0\ntopic_id: ")
    assert not lg.has_unflushed_metadata
    mgr.shutdown()


def test_a_new_log_is_its_directory_and_one_empty_log_file(tmp_path: Path) -> None:
    """What creating a partition costs the caller: no index file, no checkpoint, nothing fsynced."""
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    lg = mgr.get_or_create_log(TopicPartition("t", 0), topic_id=uuid.uuid4())
    assert sorted(p.name for p in lg.dir.iterdir()) == ["00000000000000000000.log"]
    lg.maybe_assign_epoch_start_offset(0, 0)
    assert sorted(p.name for p in lg.dir.iterdir()) == ["00000000000000000000.log"]
    mgr.shutdown()  # closing writes what is behind
    assert (lg.dir / "partition.metadata").exists()
    assert (lg.dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"


def test_a_topic_id_missing_after_a_crash_is_written_again(tmp_path: Path) -> None:
    """Kafka's initializeTopicId: a log loaded without partition.metadata (killed before the flush) takes the
    topic id the metadata gives it, and writes the file again."""
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    tp = TopicPartition("t", 0)
    tid = uuid.uuid4()
    mgr.get_or_create_log(tp, topic_id=tid).close_handles()  # a kill -9: nothing flushed
    for fd in mgr._lock_fds:  # the killed process's locks die with it
        os.close(fd)
    again = LogManager([tmp_path], CFG)
    again.startup()
    loaded = again.get_log(tp)
    assert loaded is not None and loaded.topic_id is None
    assert again.get_or_create_log(tp, topic_id=tid) is loaded and loaded.topic_id == tid
    loaded.flush_metadata_files()
    assert PartitionMetadataFile(loaded.dir / "partition.metadata").read() == tid
    again.shutdown()


def test_cleanup_and_flush_dirty_logs(tmp_path: Path) -> None:
    import dataclasses

    cfg = dataclasses.replace(CFG, retention_bytes=2048, flush_ms=0)
    mgr = LogManager([tmp_path], cfg)
    mgr.startup()
    tp = TopicPartition("r", 0)
    _fill(mgr, tp, 40)
    lg = mgr.get_log(tp)
    mgr.flush_dirty_logs(int(time.time() * 1000) + 1)
    assert lg.recovery_point == lg.log_end_offset
    n = len(lg.segments)
    mgr.cleanup_logs(NOW)
    assert len(lg.segments) < n and lg.log_start_offset > 0
    mgr.shutdown()


def test_log_config_from_topic_config() -> None:
    base = LogConfig()
    cfg = LogConfig.from_topic_config(
        {"segment.bytes": "1000", "cleanup.policy": "delete,compact", "min.insync.replicas": "2"}, base
    )
    assert cfg.segment_bytes == 1000 and cfg.cleanup_policy == "compact,delete" and cfg.compact
    with pytest.raises(ValueError, match="no.such.key"):
        LogConfig.from_topic_config({"no.such.key": "1"}, base)
    with pytest.raises(ValueError, match="retention.ms"):
        LogConfig.from_topic_config({"retention.ms": "soon"}, base)
    with pytest.raises(ValueError, match="cleanup.policy"):
        LogConfig.from_topic_config({"cleanup.policy": "forever"}, base)


def test_expired_segment_deletes_are_handed_over_once_their_delay_has_passed(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    tp = TopicPartition("trimmed", 0)
    _fill(mgr, tp, 40)
    lg = mgr.get_log(tp)
    assert len(lg.segments) > 2
    now = int(time.time() * 1000)
    assert lg.maybe_increment_log_start_offset(lg.segments[2].base_offset)
    renamed = sorted(p.name for p in lg.dir.glob("*.log.deleted"))
    assert len(renamed) == 2
    assert mgr.take_expired_segment_deletes(now) == []  # file.delete.delay.ms has not passed
    due = mgr.take_expired_segment_deletes(now + lg.config.file_delete_delay_ms + 1000)
    assert sorted(seg.log_path.name for seg in due) == renamed
    assert mgr.take_expired_segment_deletes(now + 10 * lg.config.file_delete_delay_ms) == []  # handed over once
    for seg in due:  # what the broker does in its io thread
        seg.delete_files()
    assert not list(lg.dir.glob("*.deleted"))
    assert lg.read(lg.log_start_offset, 1 << 20).records.length > 0
    mgr.shutdown()


def test_kraft_log_dir_as_kafka_formats_and_runs_it(tmp_path: Path) -> None:
    """A log dir of a Kafka 3.7 KRaft broker: meta.properties v1, bootstrap.checkpoint at the root and the
    metadata log beside the partitions. The metadata log is never loaded (nor touched) as a partition."""
    meta = "#\n#Thu Nov 26 09:00:00 UTC 2026\nnode.id=4\ndirectory.id=kA8nmpX5QnWxBbkjnOAH0w\nversion=1\n" \
           "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
    (tmp_path / "meta.properties").write_text(meta)
    (tmp_path / "bootstrap.checkpoint").write_bytes(b"\x00" * 90)
    metadata_log = tmp_path / "__cluster_metadata-0"
    metadata_log.mkdir()
    (metadata_log / "00000000000000000000.log").write_bytes(b"\x01" * 100)  # not a valid batch: untouched
    (metadata_log / "00000000000000000000.index").write_bytes(b"")
    (metadata_log / "quorum-state").write_text('{"leaderId":3000,"leaderEpoch":2,"votedId":-1}')
    (metadata_log / "00000000000000000120-0000000002.checkpoint").write_bytes(b"\x02" * 10)
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    _fill(mgr, TopicPartition("orders", 0), 2)
    assert {lg.topic_partition for lg in mgr.all_logs()} == {TopicPartition("orders", 0)}
    assert mgr.get_log(TopicPartition("__cluster_metadata", 0)) is None
    mgr.write_meta_properties(4, "MkU3OEVBNTcwNTJENDM2Qk")  # a v1 file with our ids is accepted as is
    assert (tmp_path / "meta.properties").read_text() == meta
    with pytest.raises(KafkaStorageError):
        mgr.write_meta_properties(5, "MkU3OEVBNTcwNTJENDM2Qk")
    mgr.shutdown()
    mgr = LogManager([tmp_path], CFG)
    mgr.startup()
    assert {lg.topic_partition for lg in mgr.all_logs()} == {TopicPartition("orders", 0)}
    mgr.shutdown()
    assert (metadata_log / "00000000000000000000.log").read_bytes() == b"\x01" * 100
    assert sorted(p.name for p in metadata_log.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000120-0000000002.checkpoint",
        "quorum-state"]
    assert "__cluster_metadata" not in (tmp_path / "recovery-point-offset-checkpoint").read_text()
