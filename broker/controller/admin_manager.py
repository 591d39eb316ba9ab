"""The admin entry points of any broker (Kafka's ZkAdminManager): topics and topic configs, through the store.

Contract:
- `create_topics`, `delete_topics`, `create_partitions`, `alter_topic_configs` validate a request as Kafka
  does (names, configs, assignments against the live brokers), write it to the metadata store, and wait
  (bounded by the request's timeout) until this broker's metadata shows the result: REQUEST_TIMED_OUT
  otherwise. The active controller acts on the store's watches; when this broker is the controller it is
  told at once (`Controller.process_topic_changes` / `process_deletions`). Errors are Kafka's codes.
- `auto_create_topic(name)` starts creating a topic with the broker's defaults (auto.create.topics.enable);
  `ensure_internal_topic` creates an internal topic (__consumer_offsets) with at most as many replicas as
  there are live brokers. Creation tasks are kept and cancelled by `shutdown()`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from broker.config.topics import topic_name_error
from broker.controller.limits import EXCESSIVE_BATCH, MAX_RECORDS_PER_USER_OP, too_many_records
from broker.metadata import (
    AdminOperationError,
    BadVersionError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    MetadataError,
    TopicExistsError,
    UnknownTopicError,
)
from broker.metadata.assignment import (
    assign_additional_partitions,
    assign_replicas_to_brokers,
    validate_manual_assignment,
)
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from broker.controller.controller import Controller

log = logging.getLogger("broker.controller")


@dataclass
class NewTopic:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignment: dict[int, list[int]] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


@dataclass
class TopicResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    configs: dict[str, str] = field(default_factory=dict)


class AdminManager:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.server = controller.server
        self.store = controller.store
        self._auto_creating: dict[str, asyncio.Task] = {}

    async def shutdown(self) -> None:
        tasks = list(self._auto_creating.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def _live_broker_ids(self) -> list[int]:
        return sorted(self.server.metadata_cache.brokers) or [self.broker_id]

    def _live_broker_racks(self) -> dict[int, str | None]:
        """Each live broker's broker.rack (rack-aware placement when every broker has one)."""
        brokers = self.server.metadata_cache.brokers
        if not brokers:
            return {self.broker_id: self.server.config.get("broker.rack")}
        return {b: ep.rack for b, ep in brokers.items()}

    async def create_topics(self, topics: list[NewTopic], *, validate_only: bool,
                            timeout_ms: int) -> dict[str, TopicResult]:
        results: dict[str, TopicResult] = {}
        created: list[str] = []
        cfg = self.server.config
        for t in topics:
            err = topic_name_error(t.name)
            if err is not None:
                results[t.name] = TopicResult(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
                continue
            if t.name in self.server.metadata_cache.topics:
                results[t.name] = TopicResult(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
                continue
            try:
                self.server.topic_configs.validate(t.configs)
            except ValueError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_CONFIG, str(e))
                continue
            try:
                if t.assignment:
                    if t.num_partitions != -1 or t.replication_factor != -1:
                        raise InvalidReplicaAssignmentError(
                            "Both numPartitions or replicationFactor and replicasAssignments were set. "
                            "Both cannot be used at the same time.")
                    validate_manual_assignment(t.assignment, self._live_broker_ids())
                    assignment = {p: list(r) for p, r in t.assignment.items()}
                else:
                    n = t.num_partitions if t.num_partitions != -1 else cfg["num.partitions"]
                    if too_many_records(1 + n):  # the handler counts the whole request; this topic alone here
                        results[t.name] = TopicResult(ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH)
                        continue
                    rf = t.replication_factor if t.replication_factor != -1 else cfg["default.replication.factor"]
                    assignment = assign_replicas_to_brokers(n, rf, self._live_broker_ids(),
                                                            racks=self._live_broker_racks())
            except AdminOperationError as e:
                log.warning("cannot place the replicas of topic %s: %s", t.name, e)
                results[t.name] = TopicResult(ErrorCode.UNKNOWN_SERVER_ERROR, None)
                continue
            except InvalidPartitionsError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_PARTITIONS, str(e))
                continue
            except InvalidReplicationFactorError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_REPLICATION_FACTOR, str(e))
                continue
            except InvalidReplicaAssignmentError as e:
                results[t.name] = TopicResult(ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e))
                continue
            topic_id = uuid.uuid4()
            result = TopicResult(ErrorCode.NONE, None, topic_id, len(assignment), len(assignment[0]),
                                 dict(t.configs))
            if not validate_only:
                try:
                    await self.controller.call(self.store.create_topic, t.name, topic_id, assignment, t.configs)
                except TopicExistsError:
                    results[t.name] = TopicResult(ErrorCode.TOPIC_ALREADY_EXISTS,
                                                  f"Topic '{t.name}' already exists.")
                    continue
                except MetadataError as e:
                    results[t.name] = TopicResult(ErrorCode.UNKNOWN_SERVER_ERROR, str(e))
                    continue
                self.server.topic_configs.set_overrides(t.name, t.configs)
                created.append(t.name)
                log.info("created topic %s (id %s) with %d partitions, replicas %s", t.name, topic_id,
                         len(assignment), assignment)
            results[t.name] = result
        if created:
            await self.controller.process_topic_changes(created)
            ok = await self._wait_for(lambda: all(self._topic_ready(n) for n in created), timeout_ms)
            if not ok:
                for n in created:
                    if timeout_ms <= 0 or not self._topic_ready(n):
                        results[n] = TopicResult(ErrorCode.REQUEST_TIMED_OUT,
                                                 "Topic creation did not complete in time")
            for n in created:
                tm = self.server.metadata_cache.topics.get(n)
                if tm is not None:
                    results[n].topic_id = tm.topic_id
        return results

    def _topic_ready(self, name: str) -> bool:
        tm = self.server.metadata_cache.topics.get(name)
        return tm is not None and all(p.leader >= 0 for p in tm.partitions.values()) and bool(tm.partitions)

    async def _wait_for(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        if timeout_ms <= 0:
            # Kafka's ZkAdminManager does not wait at all then: the change is made, the answer REQUEST_TIMED_OUT.
            return False
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            metadata_changed = self.controller.channels.metadata_changed
            metadata_changed.clear()
            try:
                async with asyncio.timeout(min(remaining, 0.1)):  # not wait_for: see inter_broker
                    await metadata_changed.wait()
            except TimeoutError:
                pass
        return True

    def auto_create_topic(self, name: str) -> None:
        """Start creating `name` with the broker's defaults unless that is already under way."""
        if name in self._auto_creating:
            return
        task = asyncio.get_running_loop().create_task(
            self.create_topics([NewTopic(name)], validate_only=False, timeout_ms=30000))
        self._auto_creating[name] = task

        def done(t: asyncio.Task) -> None:
            self._auto_creating.pop(name, None)
            if not t.cancelled() and t.exception() is not None:
                log.error("auto-creating topic %s failed: %r", name, t.exception())

        task.add_done_callback(done)

    async def ensure_internal_topic(self, name: str, partitions: int, replication_factor: int,
                                    configs: Mapping[str, str]) -> None:
        if name in self.server.metadata_cache.topics:
            return
        rf = max(1, min(replication_factor, len(self._live_broker_ids())))
        await self.create_topics([NewTopic(name, partitions, rf, configs=dict(configs))],
                                 validate_only=False, timeout_ms=30000)

    async def delete_topics(self, names: list[str], timeout_ms: int) -> dict[str, tuple[ErrorCode, str | None]]:
        results: dict[str, tuple[ErrorCode, str | None]] = {}
        marked = []
        for name in names:
            if name not in self.server.metadata_cache.topics:
                results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic.")
                continue
            if not self.server.config["delete.topic.enable"]:
                results[name] = (ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
                continue
            try:
                await self.controller.call(self.store.mark_topic_for_deletion, name)
            except UnknownTopicError:
                results[name] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
                continue
            marked.append(name)
            results[name] = (ErrorCode.NONE, None)
        if marked:
            await self.controller.process_deletions(marked)
            ok = await self._wait_for(lambda: all(n not in self.server.metadata_cache.topics for n in marked),
                                      timeout_ms)
            if not ok:
                for n in marked:
                    if timeout_ms <= 0 or n in self.server.metadata_cache.topics:
                        results[n] = (ErrorCode.REQUEST_TIMED_OUT, "Topic deletion did not complete in time")
        return results

    async def create_partitions(self, topic: str, count: int, assignment: list[list[int]] | None,
                                validate_only: bool, timeout_ms: int, max_new: int = MAX_RECORDS_PER_USER_OP
                                ) -> tuple[ErrorCode, str | None]:
        """`max_new`: the new partitions the request may still add (broker.controller.limits); past it the topic
        is answered UNKNOWN_SERVER_ERROR without a message, as Kafka's controller answers its overflow, before any
        placement is computed."""
        if topic in await self.controller.call(self.store.topics_pending_deletion):
            return ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion."
        info = await self.controller.call(self.store.topic, topic)
        if info is not None and (any(info.adding_replicas.values()) or any(info.removing_replicas.values())):
            # as Kafka: no new partitions while the controller may be rewriting the assignment of the old ones
            return (ErrorCode.REASSIGNMENT_IN_PROGRESS,
                    f"A partition reassignment is in progress for the topic '{topic}'.")
        if info is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        current = len(info.assignment)
        if count - current > max_new:
            log.warning("CreatePartitions of topic %s to %d partitions refused: more than %d new partitions in one "
                        "request", topic, count, max_new)
            return ErrorCode.UNKNOWN_SERVER_ERROR, None
        try:
            if count <= current:
                raise InvalidPartitionsError(
                    f"Topic currently has {current} partitions, {count} would not be an increase.")
            if assignment:
                if len(assignment) != count - current:
                    raise InvalidReplicaAssignmentError(
                        f"Increasing the number of partitions by {count - current} but {len(assignment)} "
                        "assignments provided.")
                rf = len(info.assignment[0])
                live = set(self._live_broker_ids())
                for a in assignment:
                    if len(a) != rf or len(set(a)) != len(a) or not set(a) <= live:
                        raise InvalidReplicaAssignmentError(f"invalid replica assignment {a}")
                extra = {current + i: list(a) for i, a in enumerate(assignment)}
            else:
                extra = assign_additional_partitions(info.assignment, count, self._live_broker_ids(),
                                                     racks=self._live_broker_racks())
        except AdminOperationError as e:
            log.warning("cannot place the new partitions of topic %s: %s", topic, e)
            return ErrorCode.UNKNOWN_SERVER_ERROR, None
        except InvalidPartitionsError as e:
            return ErrorCode.INVALID_PARTITIONS, str(e)
        except InvalidReplicationFactorError as e:
            return ErrorCode.INVALID_REPLICATION_FACTOR, str(e)
        except InvalidReplicaAssignmentError as e:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, str(e)
        if validate_only:
            return ErrorCode.NONE, None
        full = {p: list(r) for p, r in info.assignment.items()}
        full.update(extra)
        try:
            await self.controller.call(self.store.set_assignment, topic, full, expected_version=info.zk_version)
        except BadVersionError:
            return ErrorCode.REASSIGNMENT_IN_PROGRESS, "the topic's assignment changed concurrently"
        except UnknownTopicError:  # deleted since it was read
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist."
        await self.controller.process_topic_changes([topic])
        ok = await self._wait_for(
            lambda: topic in self.server.metadata_cache.topics
            and len(self.server.metadata_cache.topics[topic].partitions) >= count, timeout_ms)
        if not ok:
            return ErrorCode.REQUEST_TIMED_OUT, "Partition creation did not complete in time"
        log.info("topic %s now has %d partitions", topic, count)
        return ErrorCode.NONE, None

    async def alter_topic_configs(self, topic: str, configs: dict[str, str], validate_only: bool
                                  ) -> tuple[ErrorCode, str | None]:
        if topic not in self.server.metadata_cache.topics:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist"
        try:
            self.server.topic_configs.validate(configs)
        except ValueError as e:
            return ErrorCode.INVALID_CONFIG, str(e)
        if validate_only:
            return ErrorCode.NONE, None
        try:
            await self.controller.call(self.store.set_topic_configs, topic, configs)
        except UnknownTopicError:  # deleted since the check above
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist"
        self.server.topic_configs.set_overrides(topic, configs)
        self.server.on_topic_config_change(topic)
        return ErrorCode.NONE, None
