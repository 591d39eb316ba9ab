"""KIP-890 part 1 on the partition leader: a transactional produce is verified with the transaction coordinator
(AddPartitionsToTxn v4, verify_only) before a producer's first append to a partition in a transaction.

The leader side is the real ReplicaManager on real logs, whose metadata cache names the coordinator the leader
of every `__transaction_state` partition. The coordinator is the real one, a broker of its own (`coordinator`,
one per module) to which the tests speak as a transactional producer (InitProducerId, AddPartitionsToTxn)
over the wire. Four tests keep `CoordinatorDouble`, a socket server speaking the protocol codec that answers
what a test tells it, for the coordinator answers ours cannot be made to give on demand: CONCURRENT_TRANSACTIONS
at the moment of the verification, a top-level CLUSTER_AUTHORIZATION_FAILED (no ACLs here), a coordinator that
serves AddPartitionsToTxn only up to v3 (ours serves v4), and an answer held back until the test lets it go
(to see the verifications queued meanwhile go out in one request).
KIP-890 part 2 (`add_partitions`, a Produce v12): the leader has the real coordinator add the partitions over
the wire (AddPartitionsToTxn v4 without verify_only), even with verification off; the double shows the
CONCURRENT_TRANSACTIONS retries and that the answer is then CONCURRENT_TRANSACTIONS itself.
"""

from __future__ import annotations

import asyncio
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest

from broker.metadata.metadata_cache import BrokerEndpoint, PartitionMetadata
from broker.server.delayed_produce import ProducePartitionResult
from broker.server.replica_manager import ReplicaManager
from broker.server.txn_verification import TRANSACTION_STATE_TOPIC, AddPartitionsToTxnManager
from broker.server.txn_verification import TransactionSupportedOperation as Op
from broker.testing import EmbeddedBroker
from protocol import decode_request, encode_response, request_class, response_class
from protocol.api_keys import ApiKey
from protocol.errors import ErrorCode
from storage import TopicPartition
from tests.cluster.support import raw_request
from tests.e2e.support import wait_until
from tests.storage.txn_support import idempotent_batch, txn_batch

from .replication import TP, lead, replica_manager

TP1 = TopicPartition(TP.topic, 1)
ADD = Op.ADD_PARTITION
COORDINATOR_ID = 7
TXN_PARTITIONS = 3


class CoordinatorDouble:
    def __init__(self, *, max_version: int = 4) -> None:
        self.max_version = max_version
        self.requests: list[Any] = []
        self.partition_errors: dict[TopicPartition, ErrorCode] = {}
        self.top_level_error = ErrorCode.NONE
        self.hold: asyncio.Event | None = None  # set: requests wait for it before being answered
        self.port = 0
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                request = decode_request(await reader.readexactly(size))
                response = await self._answer(request)
                response.with_header(correlation_id=request.header.correlation_id)
                frame = encode_response(response)
                writer.write(struct.pack(">i", len(frame)) + frame)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _answer(self, request: Any) -> Any:
        Resp = response_class(request.API_KEY)[request.API_VERSION]
        if request.API_KEY == ApiKey.API_VERSIONS:
            keys = [Resp.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=3),
                    Resp.ApiVersion(api_key=ApiKey.ADD_PARTITIONS_TO_TXN, min_version=0, max_version=self.max_version)]
            return Resp(error_code=0, api_keys=keys, throttle_time_ms=0)
        self.requests.append(request)
        if self.hold is not None:
            await self.hold.wait()
        Result = Resp.AddPartitionsToTxnResult
        TopicResult = Result.AddPartitionsToTxnTopicResult
        PartResult = TopicResult.AddPartitionsToTxnPartitionResult
        results = [Result(transactional_id=txn.transactional_id, topic_results=[
            TopicResult(name=t.name, results_by_partition=[
                PartResult(partition_index=p, partition_error_code=self.partition_errors.get(
                    TopicPartition(t.name, p), ErrorCode.NONE)) for p in t.partitions])
            for t in txn.topics]) for txn in request.transactions]
        return Resp(throttle_time_ms=0, error_code=self.top_level_error, results_by_transaction=results)


def leader_with_coordinator(tmp_path: Path, coordinator_port: int | None,
                            real: EmbeddedBroker | None = None) -> ReplicaManager:
    """The leader of TP and TP1; its coordinator listens on `coordinator_port` (the double's), or is `real`."""
    rm = replica_manager(tmp_path, 0, known=(TP, TP1))
    cache = rm.metadata_cache
    assert cache is not None
    cache.controller_epoch = 1
    if real is not None:
        coordinator_port = real.port
        txn_partitions = real.server.config["transaction.state.log.num.partitions"]
        partition_for = real.server.transaction_coordinator.partition_for
    else:
        txn_partitions = TXN_PARTITIONS
        partition_for = lambda txn_id: hash(txn_id) % TXN_PARTITIONS  # noqa: E731
    cache.set_brokers([BrokerEndpoint(0, "127.0.0.1", 1)] + (
        [BrokerEndpoint(COORDINATOR_ID, "127.0.0.1", coordinator_port)] if coordinator_port else []))
    if coordinator_port:
        for p in range(txn_partitions):
            cache.update_partition(TRANSACTION_STATE_TOPIC, uuid.UUID(int=9), PartitionMetadata(
                p, COORDINATOR_ID, 0, (COORDINATOR_ID,), (COORDINATOR_ID,)))
    rm.add_partitions_to_txn = AddPartitionsToTxnManager(0, cache, partition_for, request_timeout_ms=5000)
    lead(rm, 1, isr=[0], tp=TP)
    lead(rm, 1, isr=[0], tp=TP1)
    return rm


async def produce(rm: ReplicaManager, batches: dict[TopicPartition, bytearray], transactional_id: str = "tx",
                  operation: Op = Op.DEFAULT_ERROR) -> dict[TopicPartition, tuple[int, str | None]]:
    result: Any = rm.append_records(1000, 1, {tp: memoryview(b) for tp, b in batches.items()},
                                    transactional_id=transactional_id, transaction_operation=operation)
    if isinstance(result, asyncio.Future):
        result = await result
    return {tp: (r.error, r.error_message) for tp, r in result.items() if isinstance(r, ProducePartitionResult)}


def log_end(rm: ReplicaManager, tp: TopicPartition) -> int:
    log_ = rm.partitions[tp].log
    assert log_ is not None
    return log_.log_end_offset


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The real transaction coordinator: a broker (id COORDINATOR_ID) that knows TP's topic (two partitions),
    so AddPartitionsToTxn accepts TP and TP1."""
    broker = EmbeddedBroker({"broker.id": str(COORDINATOR_ID)},
                            data_dir=tmp_path_factory.mktemp("coordinator")).start()
    create = request_class(ApiKey.CREATE_TOPICS)
    T = create.CreatableTopic
    created = raw_request(broker.port, create[4](topics=[T(name=TP.topic, num_partitions=2, replication_factor=1,
                                                          assignments=[], configs=[])],
                                                 timeout_ms=30000, validate_only=False), timeout=30)
    assert created.topics[0].error_code == ErrorCode.NONE, created
    yield broker
    broker.stop()


def begin(coordinator: EmbeddedBroker, txn_id: str, *tps: TopicPartition) -> tuple[int, int]:
    """As a transactional producer: InitProducerId (FindCoordinator first creates __transaction_state), then
    AddPartitionsToTxn of `tps`; the producer id and epoch."""
    find, init = request_class(ApiKey.FIND_COORDINATOR), request_class(ApiKey.INIT_PRODUCER_ID)
    answers: list[Any] = []

    def initialized() -> bool:
        raw_request(coordinator.port, find[3](key=txn_id, key_type=1))
        answers.append(raw_request(coordinator.port, init[3](transactional_id=txn_id, transaction_timeout_ms=60000,
                                                             producer_id=-1, producer_epoch=-1), timeout=30))
        return answers[-1].error_code == ErrorCode.NONE

    wait_until(initialized, 30, "the transaction coordinator")
    pid, epoch = answers[-1].producer_id, answers[-1].producer_epoch
    if tps:
        add = request_class(ApiKey.ADD_PARTITIONS_TO_TXN)
        added = raw_request(coordinator.port, add[3](
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[add.AddPartitionsToTxnTopic(name=TP.topic, partitions=[tp.partition for tp in tps])]),
            timeout=30)
        assert {p.partition_error_code for t in added.results_by_topic_v3_and_below
                for p in t.results_by_partition} == {ErrorCode.NONE}, added
    return pid, epoch


def end(coordinator: EmbeddedBroker, txn_id: str, pid: int, epoch: int, commit: bool) -> None:
    end_txn = request_class(ApiKey.END_TXN)
    ended = raw_request(coordinator.port, end_txn[3](transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                                     committed=commit), timeout=30)
    assert ended.error_code == ErrorCode.NONE, ended


def run_with_real_coordinator(tmp_path: Path, coordinator: EmbeddedBroker, scenario: Any) -> None:
    async def main() -> None:
        rm = leader_with_coordinator(tmp_path, None, coordinator)
        try:
            await asyncio.wait_for(scenario(rm), 20)
        finally:
            assert rm.add_partitions_to_txn is not None
            rm.add_partitions_to_txn.shutdown()
    asyncio.run(main())


def run_with_coordinator(tmp_path: Path, scenario: Any, **double_kw: Any) -> None:
    async def main() -> None:
        double = CoordinatorDouble(**double_kw)
        await double.start()
        rm = leader_with_coordinator(tmp_path, double.port)
        try:
            await asyncio.wait_for(scenario(rm, double), 20)
        finally:
            assert rm.add_partitions_to_txn is not None
            rm.add_partitions_to_txn.shutdown()
            await double.stop()
    asyncio.run(main())


def test_verified_partitions_are_appended_and_an_ongoing_transaction_needs_no_second_verification(
        tmp_path: Path, coordinator: EmbeddedBroker) -> None:
    pid, epoch = begin(coordinator, "tx-verified", TP, TP1)

    async def scenario(rm: ReplicaManager) -> None:
        assert await produce(rm, {TP: txn_batch(pid, 0, epoch=epoch), TP1: txn_batch(pid, 0, epoch=epoch)},
                             "tx-verified") == {TP: (ErrorCode.NONE, None), TP1: (ErrorCode.NONE, None)}
        # the coordinator aborts the transaction (its markers go to its own replicas of the topic, not to this
        # leader): asked again it would refuse TP, but the transaction is ongoing on TP here, so it is not asked
        await asyncio.to_thread(end, coordinator, "tx-verified", pid, epoch, False)
        assert await produce(rm, {TP: txn_batch(pid, 1, epoch=epoch)}, "tx-verified") == {TP: (ErrorCode.NONE, None)}
        assert log_end(rm, TP) == 2 and log_end(rm, TP1) == 1
    run_with_real_coordinator(tmp_path, coordinator, scenario)


def test_a_partition_never_added_to_the_transaction_is_not_appended(tmp_path: Path,
                                                                     coordinator: EmbeddedBroker) -> None:
    pid, epoch = begin(coordinator, "tx-only-tp", TP)

    async def scenario(rm: ReplicaManager) -> None:
        assert await produce(rm, {TP: txn_batch(pid, 0, epoch=epoch), TP1: txn_batch(pid, 0, epoch=epoch)},
                             "tx-only-tp") == {
            TP: (ErrorCode.NONE, None),
            TP1: (ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction")}
        assert log_end(rm, TP) == 1 and log_end(rm, TP1) == 0
    run_with_real_coordinator(tmp_path, coordinator, scenario)


def test_an_epoch_the_coordinator_fenced_is_not_appended(tmp_path: Path, coordinator: EmbeddedBroker) -> None:
    pid, epoch = begin(coordinator, "tx-fenced", TP)

    async def scenario(rm: ReplicaManager) -> None:
        # the coordinator answers PRODUCER_FENCED for another epoch; the leader says INVALID_PRODUCER_EPOCH
        assert await produce(rm, {TP: txn_batch(pid, 0, epoch=epoch + 1)}, "tx-fenced") == {
            TP: (ErrorCode.INVALID_PRODUCER_EPOCH, None)}
        assert log_end(rm, TP) == 0
    run_with_real_coordinator(tmp_path, coordinator, scenario)


def test_a_concurrent_transaction_is_retriable(tmp_path: Path) -> None:
    async def scenario(rm: ReplicaManager, double: CoordinatorDouble) -> None:
        double.partition_errors[TP1] = ErrorCode.CONCURRENT_TRANSACTIONS
        assert await produce(rm, {TP: txn_batch(5, 0), TP1: txn_batch(5, 0)}) == {
            TP: (ErrorCode.NONE, None),
            TP1: (ErrorCode.NOT_ENOUGH_REPLICAS, "Unable to verify the partition has been added to the transaction. "
                                                 "Underlying error: CONCURRENT_TRANSACTIONS")}
        assert log_end(rm, TP) == 1 and log_end(rm, TP1) == 0
        (request,) = double.requests
        assert request.API_VERSION == 4
        (txn,) = request.transactions
        assert (txn.transactional_id, txn.producer_id, txn.producer_epoch, txn.verify_only) == ("tx", 5, 0, True)
        assert sorted((t.name, sorted(t.partitions)) for t in txn.topics) == [(TP.topic, [0, 1])]
    run_with_coordinator(tmp_path, scenario)


def test_a_top_level_error_applies_to_every_partition(tmp_path: Path) -> None:
    async def scenario(rm: ReplicaManager, double: CoordinatorDouble) -> None:
        double.top_level_error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        result = await produce(rm, {TP: txn_batch(5, 0), TP1: txn_batch(5, 0)})
        assert {tp: e for tp, (e, _) in result.items()} == {TP: ErrorCode.INVALID_TXN_STATE,
                                                            TP1: ErrorCode.INVALID_TXN_STATE}
    run_with_coordinator(tmp_path, scenario)


def test_verifications_queued_while_one_is_in_flight_go_out_together(tmp_path: Path) -> None:
    async def scenario(rm: ReplicaManager, double: CoordinatorDouble) -> None:
        double.hold = asyncio.Event()
        first = asyncio.ensure_future(produce(rm, {TP: txn_batch(1, 0)}, "a"))
        while not double.requests:
            await asyncio.sleep(0.01)
        second = asyncio.ensure_future(produce(rm, {TP: txn_batch(2, 0)}, "b"))
        third = asyncio.ensure_future(produce(rm, {TP1: txn_batch(3, 0)}, "c"))
        again = asyncio.ensure_future(produce(rm, {TP1: txn_batch(3, 0)}, "c"))  # c again, same epoch: replaces it
        await asyncio.sleep(0.1)
        assert len(double.requests) == 1
        double.hold.set()
        results = await asyncio.gather(first, second, third, again)
        assert [r[tp][0] for r, tp in zip(results, (TP, TP, TP1, TP1), strict=True)] == [
            ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NONE]
        assert [sorted(t.transactional_id for t in r.transactions) for r in double.requests] == [["a"], ["b", "c"]]
    run_with_coordinator(tmp_path, scenario)


def test_a_coordinator_without_v4_verifies_nothing_and_the_produce_goes_through(tmp_path: Path) -> None:
    async def scenario(rm: ReplicaManager, double: CoordinatorDouble) -> None:
        assert await produce(rm, {TP: txn_batch(5, 0)}) == {TP: (ErrorCode.NONE, None)}
        assert double.requests == []
    run_with_coordinator(tmp_path, scenario, max_version=3)


def test_no_coordinator_unreachable_coordinator_and_mixed_producer_ids(tmp_path: Path) -> None:
    async def scenario() -> None:
        rm = leader_with_coordinator(tmp_path / "none", None)
        not_verified = ("Unable to verify the partition has been added to the transaction. Underlying error: ")
        assert await produce(rm, {TP: txn_batch(5, 0)}) == {
            TP: (ErrorCode.NOT_ENOUGH_REPLICAS, not_verified + "COORDINATOR_NOT_AVAILABLE")}
        # two producer ids in one request: Kafka's InvalidPidMappingException for the whole request
        result = await produce(rm, {TP: txn_batch(5, 0), TP1: txn_batch(6, 0)})
        assert {e for e, _ in result.values()} == {ErrorCode.INVALID_PRODUCER_ID_MAPPING}
        # non-transactional batches are never verified
        assert await produce(rm, {TP: idempotent_batch(8, 0)}) == {TP: (ErrorCode.NONE, None)}

        double = CoordinatorDouble()
        await double.start()
        port = double.port
        await double.stop()  # nobody listens there any more
        rm2 = leader_with_coordinator(tmp_path / "gone", port)
        assert await produce(rm2, {TP: txn_batch(5, 0)}) == {
            TP: (ErrorCode.NOT_ENOUGH_REPLICAS, not_verified + "NETWORK_EXCEPTION")}
        for r in (rm, rm2):
            assert r.add_partitions_to_txn is not None
            r.add_partitions_to_txn.shutdown()
    asyncio.run(asyncio.wait_for(scenario(), 20))


def test_turning_verification_off_lets_transactional_produce_through_unverified(
        tmp_path: Path, coordinator: EmbeddedBroker) -> None:
    pid, epoch = begin(coordinator, "tx-unverified")  # nothing added

    async def scenario(rm: ReplicaManager) -> None:
        assert (await produce(rm, {TP: txn_batch(pid, 0, epoch=epoch)}, "tx-unverified"))[TP][0] \
            == ErrorCode.INVALID_TXN_STATE
        rm.transaction_verification_enabled = lambda: False  # transaction.partition.verification.enable, dynamic
        assert await produce(rm, {TP: txn_batch(pid, 0, epoch=epoch)}, "tx-unverified") == {
            TP: (ErrorCode.NONE, None)}
        assert log_end(rm, TP) == 1
    run_with_real_coordinator(tmp_path, coordinator, scenario)


def test_tv2_produce_has_the_coordinator_add_the_partitions_over_the_wire(
        tmp_path: Path, coordinator: EmbeddedBroker) -> None:
    pid, epoch = begin(coordinator, "tx-tv2-add")  # nothing added: the produce adds

    async def scenario(rm: ReplicaManager) -> None:
        rm.transaction_verification_enabled = lambda: False  # a TV2 add does not depend on it (Kafka)
        assert await produce(rm, {TP: txn_batch(pid, 0, epoch=epoch), TP1: txn_batch(pid, 0, epoch=epoch)},
                             "tx-tv2-add", operation=ADD) == {TP: (ErrorCode.NONE, None), TP1: (ErrorCode.NONE, None)}
        assert log_end(rm, TP) == 1 and log_end(rm, TP1) == 1
        # another epoch: the coordinator refuses the add (PRODUCER_FENCED), the produce hears INVALID_PRODUCER_EPOCH;
        # another producer id: INVALID_PRODUCER_ID_MAPPING
        assert (await produce(rm, {TP1: txn_batch(pid, 0, epoch=epoch + 1)}, "tx-tv2-add", operation=ADD))[TP1][0] \
            == ErrorCode.INVALID_PRODUCER_EPOCH
        assert (await produce(rm, {TP1: txn_batch(pid + 1, 0, epoch=0)}, "tx-tv2-add", operation=ADD))[TP1][0] \
            == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    run_with_real_coordinator(tmp_path, coordinator, scenario)
    describe = request_class(ApiKey.DESCRIBE_TRANSACTIONS)[0]
    state = raw_request(coordinator.port, describe(transactional_ids=["tx-tv2-add"])).transaction_states[0]
    assert state.transaction_state == "Ongoing" and [(t.topic, sorted(t.partitions)) for t in state.topics] == [
        (TP.topic, [0, 1])]
    md = coordinator.server.transaction_coordinator.state.get_state("tx-tv2-add")[1]
    assert md.client_transaction_version == 2  # an add from a leader (v4+) is a TV2 client's


def test_tv2_produce_retries_concurrent_transactions_then_answers_it(tmp_path: Path) -> None:
    async def scenario(rm: ReplicaManager, double: CoordinatorDouble) -> None:
        double.partition_errors[TP1] = ErrorCode.CONCURRENT_TRANSACTIONS
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await produce(rm, {TP: txn_batch(5, 0), TP1: txn_batch(5, 0)}, operation=ADD) == {
            TP: (ErrorCode.NONE, None), TP1: (ErrorCode.CONCURRENT_TRANSACTIONS, None)}
        assert loop.time() - started >= 0.1  # asked again for 100 ms
        assert 3 <= len(double.requests) <= 8  # every 20 ms, each a round trip
        assert {txn.verify_only for r in double.requests for txn in r.transactions} == {False}
        assert log_end(rm, TP) == 1 and log_end(rm, TP1) == 0
    run_with_coordinator(tmp_path, scenario)
