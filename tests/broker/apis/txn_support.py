"""Transaction coordinator states for the transaction APIs' error paths, each reached on a broker through real
requests as a transactional producer sends them, except a coordinator partition that is loading and a
coordinator that has shut down, which no test can time: those are entered the way the broker enters them (the
state manager's `begin_loading` with no load task to end it; the coordinator's `shutdown`), on the broker's loop.

- `Txn.init(b, txn_id, port)`: FindCoordinator (key type 1, creating `__transaction_state`) and InitProducerId
  until the coordinator answers: a transactional id in state Empty, its producer id and epoch.
- `not_coordinator(b)`: a broker without `__transaction_state`: NOT_COORDINATOR for every transactional id.
- `loading(b, txn_id)`: a broker whose `__transaction_state` partition of `txn_id` is loading.
- `shut_down(b)`: a broker whose transaction coordinator has shut down.
- `stuck_in_prepare_commit(b)`: on the cluster, a transaction whose commit markers can never be written (its
  partition lives on broker 2 alone, killed after the partition joined the transaction): it stays PrepareCommit.
- `unwritable(b)`: on the cluster, an Ongoing transaction whose coordinator can no longer write
  `__transaction_state` (min.insync.replicas 3 with broker 2 dead): COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.e2e.support import wait_until

from .support import BEFORE_KILLING_2, Brokers

FIND = request_class(ApiKey.FIND_COORDINATOR)
INIT = request_class(ApiKey.INIT_PRODUCER_ID)
ADD = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
END = request_class(ApiKey.END_TXN)
ALTER = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)
TXN_TIMEOUT_MS = 60000


def init_request(txn_id: str, producer_id: int = -1, producer_epoch: int = -1, timeout_ms: int = TXN_TIMEOUT_MS,
                 version: int = 4) -> Any:
    return INIT[version](transactional_id=txn_id, transaction_timeout_ms=timeout_ms, producer_id=producer_id,
                         producer_epoch=producer_epoch)


@dataclass
class Txn:
    txn_id: str
    producer_id: int
    producer_epoch: int
    port: int | None = None

    @staticmethod
    def init(b: Brokers, txn_id: str, port: int | None = None) -> Txn:
        answers: list[Any] = []

        def initialized() -> bool:
            b.call(FIND[3](key=txn_id, key_type=1), port)
            answers.append(b.call(init_request(txn_id), port))
            return answers[-1].error_code == ErrorCode.NONE

        wait_until(initialized, 30, f"the transaction coordinator to initialize {txn_id}")
        return Txn(txn_id, answers[-1].producer_id, answers[-1].producer_epoch, port)

    def add(self, b: Brokers, topic: str, partitions: tuple[int, ...] = (0,), *, version: int = 3,
            producer_id: int | None = None, producer_epoch: int | None = None, txn_id: str | None = None) -> Any:
        """AddPartitionsToTxn as a client sends it (v0-3); the fields default to this transaction's."""
        return b.call(ADD[version](
            v3_and_below_transactional_id=self.txn_id if txn_id is None else txn_id,
            v3_and_below_producer_id=self.producer_id if producer_id is None else producer_id,
            v3_and_below_producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            v3_and_below_topics=[ADD.AddPartitionsToTxnTopic(name=topic, partitions=list(partitions))]), self.port)

    def end(self, b: Brokers, commit: bool, version: int = 3) -> Any:
        return b.call(END[version](transactional_id=self.txn_id, producer_id=self.producer_id,
                                   producer_epoch=self.producer_epoch, committed=commit), self.port)


def begin(b: Brokers, txn_id: str, topic: str, port: int | None = None, partitions: tuple[int, ...] = (0,)) -> Txn:
    """A transaction in state Ongoing with `topic`'s partitions in it."""
    txn = Txn.init(b, txn_id, port)
    added = txn.add(b, topic, partitions)
    assert {p.partition_error_code for t in added.results_by_topic_v3_and_below
            for p in t.results_by_partition} == {ErrorCode.NONE}, added
    return txn


def not_coordinator(b: Brokers, topic: str | None = None) -> int:
    """The port of a broker that has never created `__transaction_state` (knowing `topic`, if named)."""
    port = b.other(broker_id="31").port
    if topic is not None:
        b.topic(topic, port=port)
    return port


_loading_ready: set[int] = set()


def loading(b: Brokers, txn_id: str) -> int:
    other = b.other(broker_id="32")
    if other.port not in _loading_ready:  # once: later calls may have left its partition loading
        Txn.init(b, "loading-ready", other.port)  # __transaction_state led here (all of its partitions at once)
        _loading_ready.add(other.port)
    service = other.server.transaction_coordinator
    partition = service.partition_for(txn_id)
    other.call(service.runtime.wait_loaded, partition)  # no load of it left to end the loading below
    other.call(service.state.begin_loading, partition)
    return other.port


def shut_down(b: Brokers) -> int:
    other = b.other(broker_id="33")
    Txn.init(b, "shut-down-ready", other.port)
    other.call(other.server.transaction_coordinator.coordinator.shutdown)
    return other.port


def min_isr(b: Brokers, topic: str, replicas: int, port: int) -> None:
    """IncrementalAlterConfigs: `topic` wants `replicas` in sync."""
    R = ALTER.AlterConfigsResource
    resp = b.call(ALTER[1](resources=[R(resource_type=2, resource_name=topic, configs=[R.AlterableConfig(
        name="min.insync.replicas", config_operation=0, value=str(replicas))])], validate_only=False), port)
    assert resp.responses[0].error_code == ErrorCode.NONE, resp


def coordinated_by_0(b: Brokers, prefix: str) -> str:
    """A transactional id whose coordinator is the cluster's broker 0 (FindCoordinator, which creates
    `__transaction_state` with three replicas while all three brokers live)."""
    port = b.cluster.ports[0]
    first = f"{prefix}-0"
    wait_until(lambda: b.call(FIND[3](key=first, key_type=1), port).error_code == ErrorCode.NONE, 30,
               "the cluster's transaction coordinators")
    for i in range(200):
        if b.call(FIND[3](key=f"{prefix}-{i}", key_type=1), port).node_id == 0:
            return f"{prefix}-{i}"
    raise AssertionError("broker 0 coordinates none of 200 transactional ids")


ON_2 = "txn-on-2"  # its only replica is broker 2: once broker 2 is dead no marker can be written to it
_cluster: dict[str, Txn] = {}


def _before_killing_2(b: Brokers) -> None:
    port = b.cluster.ports[0]
    b.topic(ON_2, port=port, replicas=[2])
    _cluster["stuck"] = begin(b, coordinated_by_0(b, "stuck"), ON_2, port)


BEFORE_KILLING_2.append(_before_killing_2)


def stuck_in_prepare_commit(b: Brokers) -> Txn:
    """A transaction of the cluster's broker 0 holding a partition of broker 2 alone, committed once broker 2
    is dead: it stays PrepareCommit, its markers waiting for a leader that never comes back."""
    if "stuck-ended" not in _cluster:
        b.broker_2_killed()
        txn = _cluster["stuck"]
        ended = txn.end(b, commit=True)
        assert ended.error_code == ErrorCode.NONE, ended
        _cluster["stuck-ended"] = txn
    return _cluster["stuck-ended"]


def unwritable(b: Brokers) -> Txn:
    """An Ongoing transaction of broker 0 holding partition 0 of `txn-unwritable`, after `__transaction_state`
    wants three replicas in sync where broker 2's death left two: every state write of its coordinator fails
    (NOT_ENOUGH_REPLICAS, answered COORDINATOR_NOT_AVAILABLE). The stuck transaction commits first."""
    stuck_in_prepare_commit(b)
    if "unwritable" not in _cluster:
        port = b.cluster.ports[0]
        topic = b.topic("txn-unwritable", partitions=2, port=port, replicas=[0])
        _cluster["unwritable"] = begin(b, coordinated_by_0(b, "unwritable"), topic, port)
        min_isr(b, "__transaction_state", 3, port)
    return _cluster["unwritable"]
