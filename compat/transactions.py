"""The transaction scenarios (issue 12), registered in compat.scenarios' catalogue.

- ``transactions``: one transactional producer commits a transaction and aborts another; a zombie (the same
  producer with a transaction open) is fenced when a new instance with its transactional.id starts, and its
  commit fails with the client's fenced error; read_committed consumers (the client's and the setup client's)
  read exactly the committed records, read_uncommitted ones every record.
- ``transactions_offsets``: consume-transform-produce: a group member reads its input read_committed, the
  producer writes the output and sends the group's offsets to the transaction (send_offsets_to_transaction);
  an aborted transaction commits neither, a committed one both.
"""

from __future__ import annotations

from compat.clients.base import ClientAdapter, ConsumerHandle
from compat.context import Context, poll_exactly, poll_until, wait_until
from compat.model import CheckFailed, NotSupported, ProducerFenced, Record, check
from compat.scenarios import _values, scenario
from storage.values import TopicPartition


def _read_values(ctx: Context, reader: ClientAdapter, tps: list[TopicPartition], isolation_level: str,
                 count: int) -> list[bytes]:
    """Every value a fresh consumer of `reader` with this isolation level reads from the start: up to `count`,
    then one more poll for anything beyond them; sorted."""
    consumer = ctx.track(reader.consumer(assign=tps, isolation_level=isolation_level))
    got = poll_until(consumer, count, ctx.timeout_s)
    got += consumer.poll(10, 1.0)
    return sorted(m.value or b"" for m in got)


class _LogWatcher:
    """The setup client reading a topic read_uncommitted: what the log holds, whatever the transactions' fate.
    Clients that report no delivery inside a transaction (kcat) are waited for with it."""

    def __init__(self, ctx: Context, tps: list[TopicPartition]) -> None:
        self._ctx = ctx
        self._consumer: ConsumerHandle = ctx.track(ctx.setup.consumer(assign=tps, isolation_level="read_uncommitted"))
        self._seen: set[bytes] = set()

    def wait_for(self, values: list[bytes], what: str) -> None:
        def step() -> None:
            self._seen.update(m.value or b"" for m in self._consumer.poll(100, 0.2))
        wait_until(lambda: set(values) <= self._seen, self._ctx.timeout_s, what, step=step)


@scenario("transactions", "Transactions: commit and abort, read_committed and read_uncommitted, a zombie fenced")
def transactions(ctx: Context) -> None:
    topic = ctx.new_topic("txn", partitions=2)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    txn_id = ctx.unique("txn")
    watcher = _LogWatcher(ctx, tps)
    # Keyed records without a partition: the client's partitioner spreads each transaction over both partitions.
    def records(values: list[bytes]) -> list[Record]:
        return [Record(v, key=b"k%d" % i) for i, v in enumerate(values)]

    committed, aborted, zombie, fresh = _values(6, "committed"), _values(4, "aborted"), _values(2, "zombie"), \
        _values(3, "fresh")
    first = ctx.client.transactional_producer(txn_id)
    ctx.on_cleanup(first.close)
    first.begin()
    first.send(topic, records(committed))
    first.commit()
    first.begin()
    first.send(topic, records(aborted))
    watcher.wait_for(aborted, "the aborted transaction's records in the log before the abort")
    first.abort()
    # A zombie: the first producer has a transaction open when a new instance with its transactional.id starts.
    first.begin()
    first.send(topic, records(zombie))
    watcher.wait_for(zombie, "the zombie's records in the log")
    second = ctx.client.transactional_producer(txn_id)
    ctx.on_cleanup(second.close)
    second.begin()
    second.send(topic, records(fresh))
    watcher.wait_for(fresh, "the new instance's records in the log")
    try:
        first.commit()
    except ProducerFenced:
        pass
    else:
        raise CheckFailed("the zombie committed after a new instance with its transactional.id started")
    second.commit()
    visible = sorted(committed + fresh)
    everything = sorted(committed + aborted + zombie + fresh)
    for reader in (ctx.client, ctx.setup):
        got = _read_values(ctx, reader, tps, "read_committed", len(visible))
        check(got == visible, f"{reader.name} read_committed read {got}, expected the committed {visible}")
        got = _read_values(ctx, reader, tps, "read_uncommitted", len(everything))
        check(got == everything, f"{reader.name} read_uncommitted read {got}, expected all {len(everything)} records")


@scenario("transactions_offsets",
          "Consume-transform-produce: output and the group's offsets in one transaction (aborted, then committed)")
def transactions_offsets(ctx: Context) -> None:
    source = ctx.new_topic("ctp-in")
    out = ctx.new_topic("ctp-out")
    group = ctx.unique("g")
    tp, out_tp = TopicPartition(source, 0), TopicPartition(out, 0)
    inputs = _values(10, "in")
    ctx.setup.produce(source, [Record(v, partition=0) for v in inputs])
    producer = ctx.client.transactional_producer(ctx.unique("txn"))
    ctx.on_cleanup(producer.close)
    try:
        member: ConsumerHandle | None = ctx.track(ctx.client.consumer(group_id=group, subscribe=[source],
                                                                      isolation_level="read_committed"))
    except NotSupported:
        member = None  # a client without a scripted group consumer sends offsets by group id alone
    reader = member or ctx.track(ctx.setup.consumer(assign=[tp], isolation_level="read_committed"))
    got = poll_exactly(reader, len(inputs), ctx.timeout_s * 2)
    check([m.value for m in got] == inputs, "the input read back differs from what was produced")
    position = got[-1].offset + 1

    def transform(values: list[bytes | None]) -> list[Record]:
        return [Record(b"out-" + (v or b""), partition=0) for v in values]

    observer = ctx.track(ctx.setup.consumer(group_id=group, assign=[tp]))
    producer.begin()
    producer.send(out, transform([m.value for m in got[:5]]))
    producer.send_offsets({tp: got[4].offset + 1}, group, member)
    producer.abort()
    check(observer.committed([tp]).get(tp) is None, "the aborted transaction's offsets were committed")
    producer.begin()
    producer.send(out, transform([m.value for m in got]))
    producer.send_offsets({tp: position}, group, member)
    producer.commit()
    wait_until(lambda: observer.committed([tp]).get(tp) == (position, ""), ctx.timeout_s,
               f"the group's offset {position} committed with the transaction")
    want = sorted(b"out-" + v for v in inputs)
    got_out = _read_values(ctx, ctx.setup, [out_tp], "read_committed", len(want))
    check(got_out == want, f"read_committed output {got_out}, expected only the committed transaction's {want}")
