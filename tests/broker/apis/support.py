"""The error-path harness: every handler module lists the error codes it can return in `ERRORS`, and a test
module here, `test_<handler>_errors.py`, produces each of them through the real codec against a real broker.

A test module defines `PRODUCERS: dict[ErrorCode, Producer]` (one function per code, given the session's
`Brokers`, returning the decoded response that must carry the code) and
`test_errors = error_path_test(<handler module>, PRODUCERS)`: one test per code of the handler's `ERRORS`, so
a code listed without a producer fails, and a producer whose response lacks its code fails.
`test_meta.py` checks that every handler has `ERRORS` and a test module whose producers match it exactly.
UNKNOWN_SERVER_ERROR, which any handler answers for an unexpected failure
(a metadata store write that fails), is listed by none.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

from broker.testing import EmbeddedBroker
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.broker.wire import roundtrip
from tests.e2e.support import wait_until

# The cluster's topics broker 2 takes part in when it is killed (`Brokers.broker_2_killed`).
WAITS_FOR_2 = "waits-for-2"  # acks=-1 waits for the dead follower: REQUEST_TIMED_OUT
UNDER_MIN_ISR = "under-min-isr"  # min.insync.replicas=2, once broker 2 is out of the ISR: NOT_ENOUGH_REPLICAS
LED_BY_2 = "led-by-2"  # moves to broker 0 with a new leader epoch: FENCED_LEADER_EPOCH for the old one
OFFLINE_ON_2 = "offline-on-2"  # broker 2 its only replica: no leader once it is dead
REASSIGNING_OFF_2 = "reassigning-off-2"  # the same; a reassignment to broker 0 then never completes
THREE_REPLICAS = "three-replicas"  # more replicas than live brokers once broker 2 is dead
KILLED_2_TOPICS = {WAITS_FOR_2: [0, 2], UNDER_MIN_ISR: [0, 2], LED_BY_2: [2, 0], OFFLINE_ON_2: [2],
                   REASSIGNING_OFF_2: [2], THREE_REPLICAS: [0, 1, 2]}
# Set up on the cluster by `Brokers.broker_2_killed` just before it kills broker 2, whichever test comes first:
# the modules that need a state only broker 2's death can freeze register here when imported (collection
# imports every test module before the first test runs).
BEFORE_KILLING_2: list[Callable[[Brokers], None]] = []


@dataclass
class Brokers:
    """The session's single broker (most codes) and, started on first use, a 3-broker cluster for the codes
    only a partition led elsewhere or a lost follower can produce (`led_by_other`, `follower_lost`)."""
    single: EmbeddedBroker
    _start_cluster: Callable[[], Any]
    _cluster: Any = None
    _topics: set[str] = field(default_factory=set)
    _timed_out_produce: Any = None
    _others: dict[str, EmbeddedBroker] = field(default_factory=dict)
    _kraft: dict[bool, EmbeddedBroker] = field(default_factory=dict)

    def kraft_without_controller(self, allow_everyone: bool = True) -> int:
        """The port of a KRaft broker (`process.roles=broker`, an authorizer that allows everyone, or with
        `allow_everyone=False` refuses everything) whose controller (tests/kraft_controller.py) stopped after it
        started: what it sends on to the controller cannot be delivered. Started on first use, stopped with the
        session."""
        if allow_everyone not in self._kraft:
            from broker.config.kafka_config import KafkaConfig
            from broker.kraft.format import format_dirs
            from tests.kraft_controller import ControllerThread

            controller = ControllerThread(session_timeout_ms=60000).start()
            try:
                broker = EmbeddedBroker({
                    "process.roles": "broker", "node.id": "1", "controller.quorum.voters": controller.voters,
                    "controller.listener.names": "CONTROLLER",
                    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                    "allow.everyone.if.no.acl.found": str(allow_everyone).lower(),
                    "controlled.shutdown.enable": "false",
                    # how long a request to the gone controller is tried again before REQUEST_TIMED_OUT
                    "request.timeout.ms": "1000"})
                with open("/dev/null", "w") as out:
                    format_dirs(KafkaConfig(broker.props), controller.call(lambda c: c.cluster_id), out=out)
                self._kraft[allow_everyone] = broker.start()
            finally:
                controller.stop()
        return self._kraft[allow_everyone].port

    @property
    def cluster(self) -> Any:
        if self._cluster is None:
            self._cluster = self._start_cluster()
        return self._cluster

    def other(self, **overrides: str) -> EmbeddedBroker:
        """A second single broker with static config overrides (`delete.topic.enable`, ...), started on first
        use and stopped with the session; the keywords are the keys with `_` for `.`."""
        props = {k.replace("_", "."): v for k, v in overrides.items()}
        key = repr(sorted(props.items()))
        if key not in self._others:
            self._others[key] = EmbeddedBroker(props).start()
        return self._others[key]

    @contextlib.contextmanager
    def throwaway(self, **overrides: str) -> Iterator[EmbeddedBroker]:
        """A broker of its own, stopped as soon as the block ends: for one whose log dir a test breaks, which
        must not go on logging failed checkpoints into other tests' logs."""
        props = {k.replace("_", "."): v for k, v in overrides.items()}
        broker = EmbeddedBroker(props).start()
        try:
            yield broker
        finally:
            with contextlib.suppress(Exception):
                broker.stop()
            broker.cleanup()

    def stop_others(self) -> None:
        for b in [*self._others.values(), *self._kraft.values()]:
            with contextlib.suppress(Exception):  # some had their log dir broken on purpose
                b.stop()
            b.cleanup()

    def call(self, request: Any, port: int | None = None, timeout: float = 30) -> Any:
        """One request on a fresh connection, encoded and decoded by our codec; a closed connection fails."""
        with socket.create_connection(("127.0.0.1", port or self.single.port), timeout=timeout) as s:
            return roundtrip(s, request, 7)

    def topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
              port: int | None = None, replicas: list[int] | None = None) -> str:
        """Create a topic once (CreateTopics v4 through the codec), waiting for its leaders; `replicas`: every
        partition's replica list (else one replica, placed by the controller)."""
        key = f"{port}:{name}"
        if key in self._topics:
            return name

        Req = request_class(ApiKey.CREATE_TOPICS)
        T = Req.CreatableTopic
        assignments = [T.CreatableReplicaAssignment(partition_index=p, broker_ids=replicas)
                       for p in range(partitions)] if replicas else []
        request = Req[4](topics=[T(name=name, num_partitions=-1 if replicas else partitions,
                                   replication_factor=-1 if replicas else 1, assignments=assignments,
                                   configs=[T.CreatableTopicConfig(name=k, value=v)
                                            for k, v in (configs or {}).items()])],
                         timeout_ms=30000, validate_only=False)
        answers: list[Any] = []

        def created() -> bool:
            # As an admin client: sent to the broker `port` names as the controller, again on NOT_CONTROLLER.
            target = port
            if port is not None:
                controller = self.call(request_class(ApiKey.METADATA)[9](
                    topics=[], allow_auto_topic_creation=False), port).controller_id
                target = self.port_of(controller, port)
            try:
                answers.append(self.call(request, target))
            except OSError:
                return False  # the broker named is dead and the metadata does not know yet
            return answers[-1].topics[0].error_code != ErrorCode.NOT_CONTROLLER

        wait_until(created, 30, f"the controller to create {name}")
        resp = answers[-1]
        assert resp.topics[0].error_code in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS), resp
        if port is not None and self._cluster is not None and port in self._cluster.ports:
            # The controller's answer says it knows the topic; each other broker learns it from its own
            # LeaderAndIsr and UpdateMetadata, a moment later (a Produce sent there first answered
            # UNKNOWN_TOPIC_OR_PARTITION).
            wait_until(lambda: all(self._lists_topic(p, name) for p in self._cluster.ports), 30,
                       f"every live broker to list {name}")
        self._topics.add(key)
        return name

    def _lists_topic(self, port: int, name: str) -> bool:
        """Whether the broker on `port` lists topic `name`; a dead one (or one that does not answer within a
        second) counts as listing it."""
        Req = request_class(ApiKey.METADATA)
        try:
            response = self.call(Req[9](topics=[Req.MetadataRequestTopic(name=name)],
                                        allow_auto_topic_creation=False), port, timeout=1.0)
        except OSError:
            return True
        return response.topics[0].error_code == ErrorCode.NONE

    def port_of(self, broker_id: int, port: int) -> int:
        """The port of cluster broker `broker_id` when `port` is a cluster broker's, else `port` (a lone broker
        is its own controller)."""
        ports = self._cluster.ports if self._cluster is not None else []
        return ports[broker_id] if port in ports and 0 <= broker_id < len(ports) else port

    def broker_2_killed(self) -> Any:
        """Once per session: create the `KILLED_2_TOPICS`, kill -9 broker 2 and, while broker 0 still counts it
        in the ISR (replica.lag.time.max.ms is 3 s), send an acks=-1 Produce of 200 ms to `WAITS_FOR_2`. That
        answer (REQUEST_TIMED_OUT) is kept and returned on every call, whichever test comes first. Later
        broker 0 drops broker 2 from the ISR, and the controller moves `LED_BY_2` to broker 0 (a new leader
        epoch) once broker 2's ZooKeeper session expires."""
        c = self.cluster
        if self._timed_out_produce is None:
            for name, replicas in KILLED_2_TOPICS.items():
                self.topic(name, port=c.ports[0], replicas=replicas)
            for before in BEFORE_KILLING_2:
                before(self)
            c.brokers[2].kill()
            Req = request_class(ApiKey.PRODUCE)
            T = Req.TopicProduceData
            records = build_batch([(b"k", b"v", [], int(time.time() * 1000))])
            self._timed_out_produce = self.call(Req[9](transactional_id=None, acks=-1, timeout_ms=200, topic_data=[
                T(name=WAITS_FOR_2, partition_data=[T.PartitionProduceData(index=0, records=records)])]), c.ports[0])
        return self._timed_out_produce

    def under_min_isr(self) -> str:
        """`UNDER_MIN_ISR` once broker 0 has dropped the dead broker 2 from its ISR and it wants two replicas
        in sync: every acks=-1 append to it is refused (NOT_ENOUGH_REPLICAS)."""
        self.broker_2_killed()
        alter = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        R = alter.AlterConfigsResource
        self.call(alter[0](resources=[R(resource_type=2, resource_name=UNDER_MIN_ISR, configs=[R.AlterableConfig(
            name="min.insync.replicas", config_operation=0, value="2")])], validate_only=False),
            self.cluster.ports[0])
        wait_until(lambda: self.partition_on_0(UNDER_MIN_ISR).isr_nodes == [0], 30,
                   "broker 0 to drop its dead follower from the ISR")
        return UNDER_MIN_ISR

    def fenced_epoch(self) -> int:
        """A leader epoch of `LED_BY_2` older than broker 0's, once broker 0 leads it after broker 2's death."""
        self.broker_2_killed()
        wait_until(lambda: self.partition_on_0(LED_BY_2).leader_id == 0, 60, f"broker 0 to lead {LED_BY_2}")
        epoch = int(self.partition_on_0(LED_BY_2).leader_epoch)
        assert epoch > 0
        return epoch - 1

    def not_controller_port(self) -> int:
        """The port of a live cluster broker that is not the active controller."""
        return self.cluster.ports[1] if self._controller_id() == 0 else self.cluster.ports[0]

    def controller_port(self) -> int:
        """The port of the cluster's active controller, once broker 2 is dead and the controller knows it."""
        self.fenced_epoch()
        seen: list[int] = []
        wait_until(lambda: seen.append(self._controller_id()) or seen[-1] in (0, 1), 30, "a live controller")
        return self.cluster.ports[seen[-1]]

    def _controller_id(self) -> int:
        """The controller as broker 0's metadata names it (waiting until it names one)."""
        Req = request_class(ApiKey.METADATA)
        seen: list[int] = []
        wait_until(lambda: seen.append(self.call(Req[9](topics=[], allow_auto_topic_creation=False),
                                                 self.cluster.ports[0]).controller_id) or seen[-1] >= 0, 30,
                   "a controller")
        return seen[-1]

    def partition_on_0(self, topic: str) -> Any:
        """The partition as broker 0's metadata describes it."""
        Req = request_class(ApiKey.METADATA)
        return self.call(Req[9](topics=[Req.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False),
                         self.cluster.ports[0]).topics[0].partitions[0]

    def led_by_other(self, name: str) -> str:
        """A topic of the cluster whose one partition only broker 1 holds, known to broker 0's metadata:
        broker 0 answers for it as a broker that does not lead it."""
        c = self.cluster
        self.topic(name, port=c.ports[1], replicas=[1])
        Req = request_class(ApiKey.METADATA)
        request = Req[9](topics=[Req.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False)
        wait_until(lambda: self.call(request, c.ports[0]).topics[0].error_code == ErrorCode.NONE, 30,
                   f"broker 0 to learn {name}")
        return name


Producer = Callable[[Brokers], Any]


def error_codes(response: Any) -> set[int]:
    """Every `*error_code` value anywhere in a decoded response."""
    found: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if k.endswith("error_code") and isinstance(v, int):
                    found.add(v)
                else:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(response.to_dict())
    return found


def error_path_test(handler: ModuleType, producers: dict[ErrorCode, Producer]) -> Callable[..., None]:
    """A test parametrized by exactly `handler.ERRORS`: each code's producer must answer with that code."""
    codes = list(getattr(handler, "ERRORS", ()))

    @pytest.mark.parametrize("code", codes, ids=[c.name for c in codes])
    def test_error(brokers: Brokers, code: ErrorCode) -> None:
        assert code in producers, f"{handler.__name__} lists {code.name} but no test produces it"
        response = producers[code](brokers)
        assert response.API_KEY == handler.API_KEY
        assert code in error_codes(response), f"expected {code.name} in {response}"
    return test_error
