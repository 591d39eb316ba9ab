"""The broker's log directories: opening, recovering, creating, checkpointing and closing every Log.

Contract (Kafka's LogManager): each of ``log.dirs`` holds ``meta.properties``, a ``.lock`` (flock'd while we
run), ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``, ``replication-offset-checkpoint``
and one directory per partition. ``startup`` locks the dirs, removes ``*-delete`` directories left by
DeleteTopics, reads the checkpoints and opens every log, skipping the recovery scan when the clean-shutdown
marker ``.kafka_cleanshutdown`` exists (then removes the marker so a crash is detected next time). A damaged
partition is recovered (truncated), never fatal. ``shutdown`` closes all logs, writes the checkpoints and the
marker. A KRaft log dir also holds ``bootstrap.checkpoint`` and the metadata log ``__cluster_metadata-0/``
(the raft layer owns it, as in Kafka: never loaded as a partition); ``meta.properties`` version 1
(``node.id``, ``cluster.id``, ``directory.id``) is accepted like version 0. Future logs (``*-future``: a
replica moving to another log dir, ``create_future_log`` then ``replace_with_future_log``) left by a stop
are removed at start-up. New partitions go to the log dir holding
the fewest partitions, unless one was preferred for them
(``set_preferred_dir``). Every log shares ``producer_state_config`` (producer.id.expiration.ms: the owner
may change it at any time); ``remove_expired_producers(now_ms)`` expires idle producers in every log, for
the owner to call every producer.id.expiration.check.interval.ms. Not thread-safe: the broker's event
loop calls it, except ``flush_dirty_logs`` which may run in a worker thread.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from storage.checkpoints import OffsetCheckpointFile, fsync_dir, read_properties, write_properties
from storage.config import LogConfig
from storage.errors import CorruptLogError, KafkaStorageError
from storage.log import DELETE_DIR_SUFFIX, Log
from storage.producer_state import ProducerStateManagerConfig
from storage.segment import LogSegment
from storage.values import TopicPartition

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
META_PROPERTIES = "meta.properties"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
# Kafka's KafkaRaftServer.MetadataTopic: the directories of this topic belong to the raft layer.
METADATA_TOPIC = "__cluster_metadata"


class LogManager:
    def __init__(
        self,
        log_dirs: list[Path],
        default_config: LogConfig,
        *,
        topic_configs: Callable[[str], Mapping[str, str]] = lambda t: {},
        producer_state_config: ProducerStateManagerConfig | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("log.dirs is empty")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = default_config
        self.topic_configs = topic_configs
        self.producer_state_config = producer_state_config or ProducerStateManagerConfig()
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._lock_fds: list[int] = []
        # Logs renamed to *-delete, with the time (ms) their directory is due for removal.
        self._deleted_logs: list[tuple[Log, int]] = []
        # Where a partition not hosted yet is to be created (AlterReplicaLogDirs before its LeaderAndIsr).
        self._preferred_dir: dict[TopicPartition, Path] = {}

    # ---- startup ------------------------------------------------------------------------------------
    def config_for(self, topic: str) -> LogConfig:
        return LogConfig.from_topic_config(self.topic_configs(topic), self.default_config)

    def startup(self) -> None:
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
            self._lock_dir(d)
        for d in self.log_dirs:
            self._load_dir(d)

    def _lock_dir(self, d: Path) -> None:
        fd = os.open(d / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise KafkaStorageError(f"log dir {d} is locked by another process") from None
        self._lock_fds.append(fd)

    def _read_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except (CorruptLogError, OSError) as e:
            log.error("ignoring unreadable checkpoint %s: %s", path, e)
            return {}

    def _load_dir(self, d: Path) -> None:
        clean_marker = d / CLEAN_SHUTDOWN_FILE
        had_clean_shutdown = clean_marker.exists()
        recovery_points = self._read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
        for child in sorted(d.iterdir()):
            if not child.is_dir() or child.name.rpartition("-")[0] == METADATA_TOPIC:
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                log.info("removing deleted log directory %s", child)
                shutil.rmtree(child, ignore_errors=True)
                continue
            if child.name.endswith(FUTURE_DIR_SUFFIX):
                # A replica move cut short by a stop: the current log is intact; the move is not resumed.
                log.warning("removing the unfinished future log %s", child)
                shutil.rmtree(child, ignore_errors=True)
                continue
            try:
                tp = TopicPartition.from_dir_name(child.name)
            except ValueError:
                continue
            if child.name.endswith(STRAY_DIR_SUFFIX):
                log.warning("%s: stray log %s left aside (not served; remove it once it is not needed)", tp, child)
                continue
            if "." in child.name.rsplit("-", 1)[1] or child.name.endswith(FUTURE_DIR_SUFFIX):
                continue
            if tp in self._logs:
                raise KafkaStorageError(f"duplicate log directories for {tp}: {self._dir_of[tp]} and {d}")
            try:
                config = self.config_for(tp.topic)
            except ValueError as e:
                log.error("%s: bad topic config (%s); using defaults", tp, e)
                config = self.default_config
            lg = Log.open(
                child,
                config,
                log_start_offset=log_starts.get(tp, 0),
                recovery_point=recovery_points.get(tp, 0),
                had_clean_shutdown=had_clean_shutdown,
                producer_state_config=self.producer_state_config,
            )
            self._logs[tp] = lg
            self._dir_of[tp] = d
        if had_clean_shutdown:
            clean_marker.unlink()

    # ---- meta.properties ----------------------------------------------------------------------------
    def write_meta_properties(self, broker_id: int, cluster_id: str) -> None:
        """Check each dir's meta.properties against these ids (mismatch: KafkaStorageError) or write it."""
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
            path = d / META_PROPERTIES
            props = read_properties(path)
            if props is not None:
                stored_id = props.get("broker.id", props.get("node.id"))
                if stored_id is not None and stored_id != str(broker_id):
                    raise KafkaStorageError(f"{path}: broker.id {stored_id} does not match configured {broker_id}")
                if props.get("cluster.id") not in (None, cluster_id):
                    raise KafkaStorageError(f"{path}: cluster.id {props.get('cluster.id')} does not match {cluster_id}")
                if stored_id is not None and props.get("cluster.id") is not None:
                    continue
            write_properties(path, {"version": "0", "broker.id": str(broker_id), "cluster.id": cluster_id})

    def read_meta_properties(self) -> list[dict[str, str] | None]:
        return [read_properties(d / META_PROPERTIES) for d in self.log_dirs]

    # ---- logs -------------------------------------------------------------------------------------------
    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def dir_of(self, tp: TopicPartition) -> Path | None:
        """The log dir (as configured) holding the partition's log."""
        return self._dir_of.get(tp)

    def log_dir_named(self, path: str) -> Path | None:
        """The configured log dir whose absolute path is `path` (Kafka compares absolute paths)."""
        return next((d for d in self.log_dirs if str(d.absolute()) == path), None)

    def set_preferred_dir(self, tp: TopicPartition, log_dir: Path) -> None:
        """Create the partition's log in `log_dir` when it is created (Kafka's maybeUpdatePreferredLogDir)."""
        self._preferred_dir[tp] = log_dir

    def get_or_create_log(
        self, tp: TopicPartition, config: LogConfig | None = None, topic_id: uuid.UUID | None = None
    ) -> Log:
        existing = self._logs.get(tp)
        if existing is not None:
            if topic_id is not None and existing.topic_id is None:
                existing.assign_topic_id(topic_id)
            return existing
        target = self._preferred_dir.pop(tp, None) or self._next_log_dir()
        try:
            lg = Log.create(target / str(tp), config or self.config_for(tp.topic), topic_id=topic_id,
                            producer_state_config=self.producer_state_config)
        except OSError as e:
            # Kafka's getOrCreateLog: an I/O failure creating the log is a storage error of that partition.
            raise KafkaStorageError(f"cannot create the log of {tp} in {target}: {e}") from e
        self._logs[tp] = lg
        self._dir_of[tp] = target
        return lg

    def _next_log_dir(self) -> Path:
        """The log dir holding the fewest partitions (Kafka's nextLogDirs, first choice)."""
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        counts = {d: 0 for d in self.log_dirs}
        for d in self._dir_of.values():
            counts[d] = counts.get(d, 0) + 1
        return min(self.log_dirs, key=lambda d: counts[d])

    def create_future_log(self, tp: TopicPartition, log_dir: Path) -> Log:
        """A log for ``tp`` in ``log_dir`` under a temporary name (``<tp>.<uuid hex>-future``, skipped at start-up),
        to be filled by a replica move and put in place by ``replace_with_future_log``."""
        current = self._logs[tp]
        name = f"{tp}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"
        return Log.open(log_dir / name, current.config, topic_id=current.topic_id, had_clean_shutdown=True,
                        topic_partition=tp, producer_state_config=self.producer_state_config)

    def replace_with_future_log(self, tp: TopicPartition, future: Log, log_dir: Path, now_ms: int | None = None
                                ) -> Log:
        """Kafka's replaceCurrentWithFutureLog: the future log (holding everything the current one holds)
        becomes ``<tp>`` in ``log_dir``, the current one is deleted as DeleteTopics deletes a log. Returns the
        log now in place."""
        old = self._logs[tp]
        log_start, end = old.log_start_offset, future.log_end_offset
        future.close()
        final = log_dir / str(tp)
        os.replace(future.dir, final)
        fsync_dir(log_dir)
        moved = Log.open(final, old.config, log_start_offset=log_start, recovery_point=end, had_clean_shutdown=True,
                         topic_id=old.topic_id, producer_state_config=self.producer_state_config)
        self.delete_log(tp, now_ms)  # renames the old directory to *-delete, removed after file.delete.delay.ms
        self._logs[tp] = moved
        self._dir_of[tp] = log_dir
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        return moved

    def delete_future_log(self, future: Log) -> None:
        future.close()
        shutil.rmtree(future.dir, ignore_errors=True)

    def mark_stray(self, tp: TopicPartition) -> Path | None:
        """Kafka's stray log: closed and its directory renamed `<tp>.<uuid hex>-stray`, where it stays for the
        operator (never served, never deleted; start-up skips it). The path it went to, None if no log."""
        lg = self._logs.pop(tp, None)
        self._dir_of.pop(tp, None)
        if lg is None:
            return None
        lg.close()
        target = lg.dir.with_name(f"{tp}.{uuid.uuid4().hex}{STRAY_DIR_SUFFIX}")
        try:
            lg.dir.rename(target)
        except OSError as e:
            raise KafkaStorageError(f"cannot move the stray log of {tp} aside: {e}") from e
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        return target

    def delete_log(self, tp: TopicPartition, now_ms: int | None = None, *, checkpoint: bool = True) -> None:
        """Close the log and rename its directory to *-delete; `remove_deleted_logs` removes it once the log's
        file.delete.delay.ms has passed (Kafka's LogManager.asyncDelete). `checkpoint=False`: the caller deletes
        several and rewrites the checkpoints once after them (each rewrite lists every log)."""
        lg = self._logs.pop(tp, None)
        self._dir_of.pop(tp, None)
        if lg is None:
            return
        try:
            lg.delete()
        except OSError as e:
            # Kafka: an I/O failure in a log dir is a storage error of the partitions it touches.
            raise KafkaStorageError(f"cannot delete the log of {tp}: {e}") from e
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        self._deleted_logs.append((lg, now_ms + lg.config.file_delete_delay_ms))
        if checkpoint:
            self.checkpoint_recovery_points()
            self.checkpoint_log_start_offsets()

    def take_deleted_logs_due(self, now_ms: int | None = None) -> list[Log]:
        """The deleted logs whose directories are due for removal (all of them when `now_ms` is None), forgotten
        here: the caller removes them with `Log.remove_dir`, which needs nothing else of this manager."""
        due: list[Log] = []
        waiting: list[tuple[Log, int]] = []
        for lg, at in self._deleted_logs:
            if now_ms is None or at <= now_ms:
                due.append(lg)
            else:
                waiting.append((lg, at))
        self._deleted_logs = waiting
        return due

    def take_expired_segment_deletes(self, now_ms: int) -> list[LogSegment]:
        """Retention-deleted segments of every log whose file.delete.delay.ms has passed (Log.take_expired_deletes)."""
        return [seg for lg in list(self._logs.values()) for seg in lg.take_expired_deletes(now_ms)]

    def remove_deleted_logs(self, now_ms: int | None = None) -> None:
        """Remove the directories of deleted logs that are due (all of them when `now_ms` is None)."""
        for lg in self.take_deleted_logs_due(now_ms):
            lg.remove_dir()

    # ---- checkpoints --------------------------------------------------------------------------------
    def _logs_by_dir(self) -> dict[Path, dict[TopicPartition, Log]]:
        out: dict[Path, dict[TopicPartition, Log]] = {d: {} for d in self.log_dirs}
        for tp, lg in self._logs.items():
            out[self._dir_of[tp]][tp] = lg
        return out

    def checkpoint_recovery_points(self) -> None:
        for d, logs in self._logs_by_dir().items():
            OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).write(
                {tp: lg.recovery_point for tp, lg in logs.items()}
            )

    def checkpoint_log_start_offsets(self) -> None:
        for d, logs in self._logs_by_dir().items():
            # Kafka writes only partitions whose start moved past their first segment
            OffsetCheckpointFile(d / LOG_START_OFFSET_CHECKPOINT).write(
                {tp: lg.log_start_offset for tp, lg in logs.items() if lg.log_start_offset > lg.segments[0].base_offset}
            )

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        for d, logs in self._logs_by_dir().items():
            OffsetCheckpointFile(d / HIGH_WATERMARK_CHECKPOINT).write(
                {tp: hw for tp, hw in high_watermarks.items() if tp in logs}
            )

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for d in self.log_dirs:
            out.update(self._read_checkpoint(d / HIGH_WATERMARK_CHECKPOINT))
        return out

    # ---- background work -------------------------------------------------------------------------------
    def cleanup_logs(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int] | None = None) -> None:
        """Retention on every log (segments above a partition's high watermark, when given, are kept). The segments
        it deletes are renamed .deleted; `take_expired_segment_deletes` hands them over for unlinking later."""
        for tp, lg in list(self._logs.items()):
            hw = high_watermarks.get(tp) if high_watermarks is not None else None
            lg.delete_retention_segments(now_ms, high_watermark=hw)

    def remove_expired_producers(self, now_ms: int) -> int:
        """Kafka's periodic producer expiration, for every log at once; returns how many producers went."""
        return sum(len(lg.remove_expired_producers(now_ms)) for lg in list(self._logs.values()))

    def flush_dirty_logs(self, now_ms: int) -> None:
        for lg in list(self._logs.values()):
            if lg.log_end_offset > lg.recovery_point and now_ms - lg.last_flush_ms >= lg.config.flush_ms:
                lg.flush()

    # ---- shutdown -----------------------------------------------------------------------------------
    def shutdown(self) -> None:
        for lg in self._logs.values():
            lg.close()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        for d in self.log_dirs:
            (d / CLEAN_SHUTDOWN_FILE).touch()
        for fd in self._lock_fds:
            os.close(fd)
        self._lock_fds = []
        self._logs.clear()
        self._dir_of.clear()
