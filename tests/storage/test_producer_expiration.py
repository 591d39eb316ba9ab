"""Producer id expiration (Kafka's producer.id.expiration.ms, ProducerStateManager.removeExpiredProducers):
idle producers without an open transaction are forgotten, in the producer state, in a Log, across a
LogManager's logs and when a snapshot is loaded; an expired producer that writes again starts afresh."""

from __future__ import annotations

from pathlib import Path

from storage import AppendOrigin, Log, LogConfig, LogManager, ProducerStateManagerConfig, TopicPartition
from storage.producer_state import ProducerStateManager

from .txn_support import T0, idempotent_batch, txn_batch

EXPIRATION_MS = 3000


def data(ps: ProducerStateManager, pid: int, offset: int, *, timestamp: int, transactional: bool = False) -> None:
    info = ps.prepare_update(pid, AppendOrigin.CLIENT)
    info.append_data_batch(0, 0, 0, timestamp, offset, offset, transactional)
    ps.update(info)


def test_idle_producers_without_an_open_transaction_expire(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path, config=ProducerStateManagerConfig(EXPIRATION_MS))
    data(ps, 1, 0, timestamp=1000)  # idempotent
    data(ps, 2, 1, timestamp=1000, transactional=True)  # opens a transaction
    data(ps, 3, 2, timestamp=2000)  # idempotent, written later
    assert ps.remove_expired_producers(1000 + EXPIRATION_MS - 1) == []  # nobody idle long enough yet
    # Exactly producer.id.expiration.ms idle is expired (Kafka: >=); the open transaction keeps producer 2.
    assert ps.remove_expired_producers(1000 + EXPIRATION_MS) == [1]
    assert sorted(ps.producers) == [2, 3]
    assert ps.remove_expired_producers(10 * EXPIRATION_MS) == [3]
    assert sorted(ps.producers) == [2] and ps.first_unstable_offset() == 1  # the LSO still waits for it
    # Once its transaction ends, producer 2 ages from the marker's timestamp like any other.
    info = ps.prepare_update(2, AppendOrigin.COORDINATOR)
    done = info.append_end_txn_marker(True, 0, 0, 3, 20 * EXPIRATION_MS)
    ps.update(info)
    ps.complete_txn(done)
    assert ps.remove_expired_producers(21 * EXPIRATION_MS - 1) == []
    assert ps.remove_expired_producers(21 * EXPIRATION_MS) == [2]
    assert ps.producers == {}


def test_the_shared_config_is_read_at_each_check(tmp_path: Path) -> None:
    config = ProducerStateManagerConfig()  # Kafka's default: one day
    assert config.producer_id_expiration_ms == 86_400_000
    a = ProducerStateManager(tmp_path / "a", config=config)
    b = ProducerStateManager(tmp_path / "b", config=config)
    data(a, 1, 0, timestamp=1000)
    data(b, 1, 0, timestamp=1000)
    assert a.remove_expired_producers(1000 + 60_000) == [] and b.remove_expired_producers(1000 + 60_000) == []
    config.producer_id_expiration_ms = 60_000  # a dynamic update reaches every partition
    assert a.remove_expired_producers(1000 + 60_000) == [1] and b.remove_expired_producers(1000 + 60_000) == [1]


def test_verification_entries_expire_too(tmp_path: Path) -> None:
    ps = ProducerStateManager(tmp_path, config=ProducerStateManagerConfig(EXPIRATION_MS))
    ps.maybe_create_verification_state_entry(7, 0, 0, now_ms=1000)
    ps.remove_expired_producers(1000 + EXPIRATION_MS - 1)
    assert ps.verification_state_entry(7) is not None
    ps.remove_expired_producers(1000 + EXPIRATION_MS)
    assert ps.verification_state_entry(7) is None


def open_log(path: Path, config: ProducerStateManagerConfig, **kw) -> Log:
    return Log.open(path / "orders-0", LogConfig(), producer_state_config=config, **kw)


def test_an_expired_producer_writes_again_with_any_sequence(tmp_path: Path) -> None:
    lg = open_log(tmp_path, ProducerStateManagerConfig(EXPIRATION_MS))
    lg.append_as_leader(idempotent_batch(5, 0, 3), 0, now_ms=T0)  # sequences 0..2, timestamps T0..T0+2
    assert lg.remove_expired_producers(T0 + 2 + EXPIRATION_MS) == [5]
    assert lg.producer_state.last_entry(5) is None
    # Kafka 3.7 keeps no state for the id, so the producer's next batch (sequence 3, not 0) is taken as it
    # comes: no UNKNOWN_PRODUCER_ID, no OUT_OF_ORDER_SEQUENCE_NUMBER; the state starts again from it.
    info = lg.append_as_leader(idempotent_batch(5, 3, 2), 0, now_ms=T0 + 2 + EXPIRATION_MS)
    assert (info.first_offset, info.last_offset, info.duplicate) == (3, 4, False)
    assert lg.producer_state.last_entry(5).last_seq == 4
    lg.close()


def test_a_log_loaded_later_leaves_expired_producers_out(tmp_path: Path) -> None:
    config = ProducerStateManagerConfig(EXPIRATION_MS)
    lg = open_log(tmp_path, config)
    lg.append_as_leader(idempotent_batch(1, 0, 2), 0, now_ms=T0)
    lg.append_as_leader(txn_batch(2, 0, 2), 0, now_ms=T0)  # an open transaction, from T0 as well
    lg.close()  # a snapshot at the log end holds both producers
    lg = open_log(tmp_path, config, had_clean_shutdown=True, now_ms=T0 + 1)
    assert sorted(lg.producer_state.producers) == [1, 2]  # not idle long enough yet
    lg.close()
    lg = open_log(tmp_path, config, had_clean_shutdown=True, now_ms=T0 + 1 + EXPIRATION_MS)
    assert sorted(lg.producer_state.producers) == [2]  # as Kafka's loadFromSnapshot: the idle one is left out
    assert lg.first_unstable_offset == 2
    lg.close()


def test_log_manager_expires_producers_in_every_log(tmp_path: Path) -> None:
    config = ProducerStateManagerConfig(EXPIRATION_MS)
    mgr = LogManager([tmp_path / "d"], LogConfig(), producer_state_config=config)
    mgr.startup()
    logs = [mgr.get_or_create_log(TopicPartition("t", p), LogConfig()) for p in range(2)]
    for i, lg in enumerate(logs):
        assert lg.producer_state.config is config
        lg.append_as_leader(idempotent_batch(10 + i, 0), 0, now_ms=T0)
        lg.append_as_leader(txn_batch(20 + i, 0), 0, now_ms=T0)
    assert mgr.remove_expired_producers(T0 + EXPIRATION_MS - 1) == 0
    assert mgr.remove_expired_producers(T0 + EXPIRATION_MS) == 2
    assert [sorted(lg.producer_state.producers) for lg in logs] == [[20], [21]]
    mgr.shutdown()
