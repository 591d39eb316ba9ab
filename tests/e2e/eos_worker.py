"""A consume-transform-produce worker written as a user writes an exactly-once loop (not a test module).

    python eos_worker.py --bootstrap B --input A --output O --group G --transactional-id T --expected N

confluent-kafka, as its documentation shows the loop: a consumer in group G (enable.auto.commit off,
isolation.level read_committed) subscribed to A; a transactional producer with the fixed transactional.id T.
Each poll batch is one transaction: begin, one output per input (value ``out:<input value>``, same key, the
input's partition of O, so every input partition's outputs keep input order), the consumer's positions sent
with ``send_offsets_to_transaction``, commit. An abortable error aborts the transaction and rewinds the
consumer to the group's committed offsets; a retriable error retries the same call; a fatal one exits 1 with
the error printed. The worker exits 0 once the group's committed offsets cover all N inputs of A.

Progress on stdout, one line each, for the test driving it (which kill -9s it at random points):
``READY``, ``BEGIN <records>``, ``COMMITTED <transactions> <records> <ms>`` (this process's totals and how
long the transaction took), ``ABORTED <error>``, ``RETRY <call> <error>``, ``DONE <committed offsets>``,
``FATAL <error>``, ``HUNG <call>`` (exit 3, see HUNG_AFTER).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

TIMEOUT = 30.0  # seconds for each transactional call; a call that times out is retriable and called again
# A call still blocked this long after its timeout is a librdkafka hang, not an answer: since librdkafka 2.x
# decommissions a broker missing from a Metadata response (a dead one), send_offsets_to_transaction can wait
# forever on a group coordinator that was decommissioned (librdkafka issues #5511 and #5456: the coordinator
# request's timeout is never checked). The worker then exits HUNG_EXIT, as a crash; the test restarts it.
HUNG_AFTER = TIMEOUT + 15
HUNG_EXIT = 3


class Abort(Exception):
    """The transaction must be aborted (the error said so)."""


def say(line: str) -> None:
    print(line, flush=True)


def error_of(e: KafkaException) -> KafkaError:
    return e.args[0]


def retrying(name: str, call: Callable[[], Any]) -> Any:
    """`call()` until it does not fail with a retriable error; abortable errors raise Abort, fatal ones exit."""
    while True:
        watchdog = threading.Timer(HUNG_AFTER, hung, args=(name,))
        watchdog.daemon = True
        watchdog.start()
        try:
            return call()
        except KafkaException as e:
            err = error_of(e)
            if err.fatal():
                say(f"FATAL {name}: {err}")
                sys.exit(1)
            if err.txn_requires_abort():
                raise Abort(f"{name}: {err}") from e
            if not err.retriable():
                say(f"FATAL {name} (neither retriable nor abortable): {err}")
                sys.exit(1)
            say(f"RETRY {name} {err}")
        finally:
            watchdog.cancel()


def hung(name: str) -> None:
    say(f"HUNG {name}: blocked {HUNG_AFTER:.0f}s, past its {TIMEOUT:.0f}s timeout (librdkafka #5511)")
    os._exit(HUNG_EXIT)


def committed_offsets(consumer: Consumer) -> list[TopicPartition]:
    assignment = consumer.assignment()
    if not assignment:
        return []
    return retrying("committed", lambda: consumer.committed(assignment, timeout=TIMEOUT))


def rewind(consumer: Consumer) -> None:
    """Back to the group's committed offsets: what the aborted transaction consumed is processed again."""
    for tp in committed_offsets(consumer):
        offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
        retrying("seek", lambda tp=tp, offset=offset: consumer.seek(TopicPartition(tp.topic, tp.partition, offset)))


def transform(msg: Any) -> bytes:
    return b"out:" + msg.value()


def transact(producer: Producer, consumer: Consumer, batch: list[Any], output: str) -> None:
    """One transaction: the outputs of `batch` and the consumer's positions after it, committed together."""
    retrying("begin_transaction", producer.begin_transaction)
    for msg in batch:
        retrying("produce", lambda msg=msg: producer.produce(output, transform(msg), key=msg.key(),
                                                             partition=msg.partition()))
    positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
    metadata = consumer.consumer_group_metadata()
    retrying("send_offsets_to_transaction", lambda: producer.send_offsets_to_transaction(positions, metadata, TIMEOUT))
    retrying("commit_transaction", lambda: producer.commit_transaction(TIMEOUT))


def run(args: argparse.Namespace) -> int:
    # metadata.recovery.strategy none: with every broker down (the single broker killed) librdkafka would
    # otherwise re-bootstrap and decommission the broker, and send_offsets_to_transaction then waits forever
    # on the decommissioned group coordinator, past its timeout (librdkafka issue #5511, a client bug).
    common = {"bootstrap.servers": args.bootstrap, "metadata.recovery.strategy": "none"}
    if args.debug:
        common["debug"] = args.debug  # librdkafka's debug contexts, logged to stderr
    producer = Producer({**common, "transactional.id": args.transactional_id, "transaction.timeout.ms": 60000})
    retrying("init_transactions", lambda: producer.init_transactions(TIMEOUT))
    consumer = Consumer({**common, "group.id": args.group,
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 500})
    consumer.subscribe([args.input])
    say("READY")
    transactions = records = 0
    while True:
        batch = [m for m in consumer.consume(args.batch, 0.5) if m.error() is None]
        if not batch:
            offsets = committed_offsets(consumer)
            if sum(tp.offset for tp in offsets if tp.offset >= 0) >= args.expected:
                say(f"DONE {' '.join(f'{tp.partition}:{tp.offset}' for tp in offsets)}")
                consumer.close()
                return 0
            continue
        say(f"BEGIN {len(batch)}")
        began = time.monotonic()
        try:
            transact(producer, consumer, batch, args.output)
        except Abort as e:
            say(f"ABORTED {e}")
            retrying("abort_transaction", lambda: producer.abort_transaction(TIMEOUT))
            rewind(consumer)
            continue
        transactions += 1
        records += len(batch)
        say(f"COMMITTED {transactions} {records} {(time.monotonic() - began) * 1000:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--expected", type=int, required=True, help="how many records topic A holds")
    parser.add_argument("--batch", type=int, default=20, help="most records per poll, i.e. per transaction")
    parser.add_argument("--debug", default="", help="librdkafka debug contexts, e.g. eos,protocol")
    started = time.monotonic()
    code = run(parser.parse_args())
    say(f"EXIT {code} after {time.monotonic() - started:.1f}s")
    sys.exit(code)


if __name__ == "__main__":
    main()
