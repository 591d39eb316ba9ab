"""The scenario catalogue: small independent checks, each with one clear verdict.

Every scenario is ``fn(ctx) -> None`` written against the client-neutral adapter surface
(compat.clients.base), so the same check runs with every stock client. A scenario creates its
own topics and groups (uuid-suffixed), bounds every wait by ``ctx.timeout_s``, and observes the
outcome from the neutral setup client where that makes the verdict independent of the client
under test. SCENARIOS keeps catalogue order, which is the order of the report's columns.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from compat.context import Context, poll_exactly, poll_until, wait_until
from compat.model import (
    CheckFailed,
    NeedsEnvironment,
    NotSupported,
    ProduceFailed,
    Record,
    Skip,
    check,
)
from storage.values import TopicPartition

# Kafka's default message.max.bytes (1 MiB + 12 bytes of legacy log overhead).
DEFAULT_MESSAGE_MAX_BYTES = 1048588


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    fn: Callable[[Context], None]


SCENARIOS: dict[str, Scenario] = {}


def scenario(id: str, title: str) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    def register(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        SCENARIOS[id] = Scenario(id, title, fn)
        return fn
    return register


def _values(n: int, tag: str = "v") -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(n)]


def _broker_config(ctx: Context) -> dict[str, str]:
    view = ctx.setup.describe_cluster()
    node = min(view.brokers) if view.brokers else 0
    return ctx.setup.describe_configs("broker", str(node))


def _message_max_bytes(ctx: Context) -> int:
    try:
        return int(_broker_config(ctx).get("message.max.bytes", DEFAULT_MESSAGE_MAX_BYTES))
    except Skip:
        return DEFAULT_MESSAGE_MAX_BYTES


# -- metadata and version negotiation -----------------------------------------------------------

@scenario("metadata", "Metadata and ApiVersions negotiation")
def metadata(ctx: Context) -> None:
    topic = ctx.new_topic("md", partitions=3)
    view = ctx.client.cluster([topic])
    check(len(view.brokers) == ctx.cluster_size,
          f"expected {ctx.cluster_size} brokers in metadata, got {sorted(view.brokers)}")
    parts = view.topics.get(topic)
    check(parts is not None, f"topic {topic} missing from metadata")
    assert parts is not None
    check(sorted(parts) == [0, 1, 2], f"expected partitions [0, 1, 2], got {sorted(parts)}")
    for p, leader in parts.items():
        check(leader in view.brokers, f"partition {p} leader {leader} is not a known broker")
    everything = ctx.client.cluster(None)
    check(topic in everything.topics, "Metadata for all topics does not list the new topic")
    try:
        versions = ctx.client.api_versions()
    except Skip:
        return
    # Produce, Fetch, ListOffsets, Metadata, ApiVersions are the minimum any client needs.
    for key in (0, 1, 2, 3, 18):
        check(key in versions, f"ApiVersions does not advertise api key {key}")
        lo, hi = versions[key]
        check(0 <= lo <= hi, f"api key {key} has an invalid range {lo}..{hi}")


@scenario("invalid_topic", "Metadata for an invalid topic name: INVALID_TOPIC_EXCEPTION, the client goes on")
def invalid_topic(ctx: Context) -> None:
    bad = f"bad topic {ctx.unique('x')}!"
    view = ctx.client.cluster([bad])
    if view.topic_errors is None:
        raise NotSupported(f"{ctx.client.name}'s adapter does not report Metadata topic errors")
    check(view.topic_errors.get(bad) == 17, f"Metadata answered {view.topic_errors} for {bad!r}, expected 17 "
          "(INVALID_TOPIC_EXCEPTION)")
    check(not view.topics.get(bad), f"the invalid topic {bad!r} is listed with partitions")
    topic = ctx.new_topic("it")
    check(topic in ctx.client.cluster([topic]).topics, "the client cannot read metadata after the invalid name")


# -- produce / consume ---------------------------------------------------------------------------

@scenario("produce_consume", "Keys, headers, null and empty keys/values round trip")
def produce_consume(ctx: Context) -> None:
    topic = ctx.new_topic("pc")
    records = [
        Record(b"value-1", key=b"key-1", headers=(("h1", b"x"), ("h2", b""))),
        Record(b"value-no-key", key=None),
        Record(None, key=b"tombstone-key"),
        Record(b"", key=b""),
    ]
    for r in records:
        ctx.client.produce(topic, [Record(r.value, r.key, r.headers, partition=0)])
    # Read back with the client under test and with the setup client (exact even where the
    # client under test cannot tell an empty key from a null one).
    for reader, exact in ((ctx.client, ctx.client.distinguishes_empty_from_null), (ctx.setup, True)):
        consumer = ctx.track(reader.consumer(assign=[TopicPartition(topic, 0)]))
        got = poll_exactly(consumer, len(records), ctx.timeout_s)
        check([m.offset for m in got] == [0, 1, 2, 3], f"offsets {[m.offset for m in got]} != [0, 1, 2, 3]")
        for want, m in zip(records, got, strict=True):
            def same(a: bytes | None, b: bytes | None, exact: bool = exact) -> bool:
                return a == b if exact else (a or b"") == (b or b"")
            who = f"{reader.name}, offset {m.offset}"
            check(same(m.key, want.key), f"{who}: key {m.key!r} != {want.key!r}")
            check(same(m.value, want.value), f"{who}: value {m.value!r} != {want.value!r}")
            check(tuple(m.headers) == want.headers, f"{who}: headers {m.headers!r} != {want.headers!r}")


def _compression(codec: str) -> Callable[[Context], None]:
    def run(ctx: Context) -> None:
        topic = ctx.new_topic(f"z{codec}")
        values = [(b"%05d " % i) + b"compressible payload " * 10 for i in range(200)]
        ctx.client.produce(topic, [Record(v, key=b"k", partition=0) for v in values], compression=codec)
        consumer = ctx.track(ctx.client.consumer(assign=[TopicPartition(topic, 0)]))
        got = poll_exactly(consumer, len(values), ctx.timeout_s)
        check([m.value for m in got] == values, f"{codec}: consumed values differ from produced")
        check([m.offset for m in got] == list(range(len(values))), f"{codec}: offsets not 0..{len(values) - 1}")
    return run


for _codec in ("gzip", "snappy", "lz4", "zstd"):
    scenario(f"compression_{_codec}", f"Produce/consume with {_codec} compression")(_compression(_codec))


@scenario("large_message", "A message just under message.max.bytes round trips")
def large_message(ctx: Context) -> None:
    limit = _message_max_bytes(ctx)
    # Leave room for the batch header (61 bytes) and the record's own framing.
    value = os.urandom(limit - 512)
    topic = ctx.new_topic("big")
    ctx.client.produce(topic, [Record(value, key=b"big", partition=0)], max_request_size=limit + 4096)
    consumer = ctx.track(ctx.client.consumer(assign=[TopicPartition(topic, 0)]))
    got = poll_exactly(consumer, 1, ctx.timeout_s)
    check(got[0].value is not None and len(got[0].value) == len(value),
          f"consumed {len(got[0].value or b'')} bytes, produced {len(value)}")
    check(hashlib.sha256(got[0].value or b"").digest() == hashlib.sha256(value).digest(), "large value corrupted")


@scenario("message_too_large", "A message over message.max.bytes is rejected with MESSAGE_TOO_LARGE")
def message_too_large(ctx: Context) -> None:
    limit = _message_max_bytes(ctx)
    topic = ctx.new_topic("toobig")
    value = os.urandom(limit + 1024)
    try:
        ctx.client.produce(topic, [Record(value, partition=0)], max_request_size=limit * 2)
    except ProduceFailed as e:
        check(e.error in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE"),
              f"expected MESSAGE_TOO_LARGE, got {e.error}")
    else:
        raise CheckFailed(f"a {len(value)}-byte message was accepted with message.max.bytes={limit}")
    offsets = ctx.setup.list_offsets([TopicPartition(topic, 0)], "latest")
    check(offsets[TopicPartition(topic, 0)] == 0, "the rejected message was appended anyway")


def _acks(acks: int) -> Callable[[Context], None]:
    def run(ctx: Context) -> None:
        topic = ctx.new_topic(f"acks{acks}")
        values = _values(20)
        result = ctx.client.produce(topic, [Record(v, partition=0) for v in values], acks=acks)
        if acks != 0 and ctx.client.reports_produce_offsets:
            check([o for _, o in result] == list(range(20)), f"acks={acks}: offsets {[o for _, o in result]}")
        consumer = ctx.track(ctx.setup.consumer(assign=[TopicPartition(topic, 0)]))
        got = poll_exactly(consumer, len(values), ctx.timeout_s)
        check([m.value for m in got] == values, f"acks={acks}: consumed values differ from produced")
    return run


for _a, _name in ((0, "0"), (1, "1"), (-1, "all")):
    scenario(f"acks_{_name}", f"Produce with acks={_name}")(_acks(_a))


@scenario("idempotent_producer", "Idempotent producer: every record exactly once, in order")
def idempotent_producer(ctx: Context) -> None:
    topic = ctx.new_topic("idem", partitions=2)
    values = _values(300)
    ctx.client.produce(topic, [Record(v, partition=i % 2) for i, v in enumerate(values)], idempotent=True)
    consumer = ctx.track(ctx.setup.consumer(assign=[TopicPartition(topic, 0), TopicPartition(topic, 1)]))
    got = poll_exactly(consumer, len(values), ctx.timeout_s)
    for p in (0, 1):
        mine = [m.value for m in got if m.partition == p]
        check(mine == values[p::2], f"partition {p}: duplicates, loss or reordering")
    extra = consumer.poll(10, 0.5)
    check(not extra, f"{len(extra)} duplicate records after the expected ones")


@scenario("idempotent_producer_ids", "Fresh idempotent producers each get their own producer id (no record dropped)")
def idempotent_producer_ids(ctx: Context) -> None:
    topic = ctx.new_topic("pids")
    values = _values(20, "p")
    # Each record from a new producer: InitProducerId per producer, sequence 0 each time. A broker
    # handing out a producer id twice makes the partition leader drop the later records as duplicates.
    for v in values:
        ctx.client.produce(topic, [Record(v, partition=0)], idempotent=True)
    consumer = ctx.track(ctx.setup.consumer(assign=[TopicPartition(topic, 0)]))
    got = poll_until(consumer, len(values), ctx.timeout_s)
    check([m.value for m in got] == values, f"{len(got)} of {len(values)} records from fresh idempotent "
          "producers are in the log (producer ids handed out twice?)")


# -- consumer groups -----------------------------------------------------------------------------

@scenario("group_consume", "Group subscribe, consume, commit; a new member resumes after the commit")
def group_consume(ctx: Context) -> None:
    topic = ctx.new_topic("grp", partitions=2)
    group = ctx.unique("g")
    first = _values(20, "a")
    ctx.setup.produce(topic, [Record(v, partition=i % 2) for i, v in enumerate(first)])
    c1 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic]))
    got = poll_exactly(c1, len(first), ctx.timeout_s * 2)
    check(sorted(m.value or b"" for m in got) == sorted(first), "group member did not get every record")
    ends: dict[TopicPartition, tuple[int, str]] = {}
    for m in got:
        tp = TopicPartition(m.topic, m.partition)
        ends[tp] = (max(ends.get(tp, (0, ""))[0], m.offset + 1), "")
    c1.commit(ends)
    c1.close()
    second = _values(6, "b")
    ctx.setup.produce(topic, [Record(v, partition=i % 2) for i, v in enumerate(second)])
    c2 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic]))
    got2 = poll_until(c2, len(second), ctx.timeout_s * 2)
    got2 += c2.poll(10, 1.0)
    check(sorted(m.value or b"" for m in got2) == sorted(second),
          f"after commit a new member should get only the {len(second)} new records, got {len(got2)}")


@scenario("group_rebalance", "Rebalance when a member joins and when one leaves")
def group_rebalance(ctx: Context) -> None:
    topic = ctx.new_topic("reb", partitions=4)
    group = ctx.unique("g")
    all_tps = {TopicPartition(topic, p) for p in range(4)}
    c1 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic]))
    wait_until(lambda: c1.assignment() == all_tps, ctx.timeout_s * 2, "the only member to own all 4 partitions",
               step=lambda: c1.poll(1, 0.2))
    c2 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic]))

    def split() -> bool:
        a1, a2 = c1.assignment(), c2.assignment()
        return bool(a1) and bool(a2) and not (a1 & a2) and (a1 | a2) == all_tps

    def step() -> None:
        c1.poll(1, 0.1)
        c2.poll(1, 0.1)

    wait_until(split, ctx.timeout_s * 2, "both members to share the 4 partitions", step=step)
    c2.close()
    wait_until(lambda: c1.assignment() == all_tps, ctx.timeout_s * 2,
               "the remaining member to own all partitions after the other left", step=lambda: c1.poll(1, 0.2))


@scenario("group_protocol_consumer", "KIP-848 consumer group (group.protocol=consumer): the broker assigns, "
                                     "members split the partitions and take over a leaver's")
def group_protocol_consumer(ctx: Context) -> None:
    topic = ctx.new_topic("kip848", partitions=4)
    group = ctx.unique("g")
    all_tps = {TopicPartition(topic, p) for p in range(4)}
    values = _values(8)
    ctx.setup.produce(topic, [Record(v, partition=i % 4) for i, v in enumerate(values)])
    c1 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic], group_protocol="consumer"))
    got = poll_exactly(c1, len(values), ctx.timeout_s * 2)
    check(sorted(m.value or b"" for m in got) == sorted(values), "the only member did not get every record")
    check(c1.assignment() == all_tps, f"the only member owns {sorted(c1.assignment())}, not all 4 partitions")
    c1.commit({TopicPartition(topic, p): (2, "") for p in range(4)})
    c2 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic], group_protocol="consumer"))

    def split() -> bool:
        a1, a2 = c1.assignment(), c2.assignment()
        check(not (a1 & a2), f"a partition owned by both members: {sorted(a1 & a2)}")
        return len(a1) == 2 and len(a2) == 2 and (a1 | a2) == all_tps

    def step() -> None:
        c1.poll(1, 0.1)
        c2.poll(1, 0.1)

    wait_until(split, ctx.timeout_s * 2, "both members to own 2 of the 4 partitions", step=step)
    c1.close()
    wait_until(lambda: c2.assignment() == all_tps, ctx.timeout_s * 2,
               "the remaining member to own all partitions after the other left", step=lambda: c2.poll(1, 0.2))


@scenario("share_group", "KIP-932 share group: two members share two partitions, every record is delivered "
                         "once and acknowledged records never again")
def share_group(ctx: Context) -> None:
    try:
        if 76 not in ctx.setup.api_versions():  # ShareGroupHeartbeat
            raise NeedsEnvironment("the broker serves no share groups (ShareGroupHeartbeat: Kafka 4.1+)")
    except NotSupported:
        pass  # the setup client cannot tell: the scenario finds out
    topic = ctx.new_topic("share", partitions=2)
    group = ctx.unique("sg")
    members = [ctx.track(ctx.client.share_consumer(group_id=group, subscribe=[topic])) for _ in range(2)]
    got: list[tuple[int, int, bytes]] = []

    def poll_all() -> None:
        for m in members:
            got.extend((r.partition, r.offset, r.value or b"") for r in m.poll(100, 0.2))

    # A share group starts at the latest offset (share.auto.offset.reset): markers are produced until one
    # from each partition arrives, so both share partitions started before the records that count.
    def markers_seen() -> bool:
        ctx.setup.produce(topic, [Record(b"marker", partition=p) for p in range(2)])
        poll_all()
        return {p for p, _, v in got if v == b"marker"} == {0, 1}

    wait_until(markers_seen, ctx.timeout_s * 2, "a marker from each partition", step=poll_all)
    values = _values(40, "share")
    ctx.setup.produce(topic, [Record(v, partition=i % 2) for i, v in enumerate(values)])
    wait_until(lambda: sum(v != b"marker" for _, _, v in got) >= len(values), ctx.timeout_s * 2,
               "every record delivered to a member", step=poll_all)
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # acknowledged records (the previous polls') are never redelivered
        poll_all()
    records = [(p, o, v) for p, o, v in got if v != b"marker"]
    check(sorted(v for _, _, v in records) == sorted(values), "the members did not get every record exactly once")
    check(len({(p, o) for p, o, _ in got}) == len(got), "a record was delivered twice")


@scenario("static_membership", "Static member (group.instance.id) rejoins without waiting out its session")
def static_membership(ctx: Context) -> None:
    topic = ctx.new_topic("static", partitions=2)
    group = ctx.unique("g")
    instance = ctx.unique("inst")
    all_tps = {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    c1 = ctx.client.consumer(group_id=group, subscribe=[topic], group_instance_id=instance)
    try:
        wait_until(lambda: c1.assignment() == all_tps, ctx.timeout_s * 2, "the static member's assignment",
                   step=lambda: c1.poll(1, 0.2))
        desc = ctx.setup.describe_group(group)
        check(instance in desc.instance_ids, f"DescribeGroups does not show instance id (got {desc.instance_ids})")
    finally:
        c1.close()
    start = time.monotonic()
    c2 = ctx.track(ctx.client.consumer(group_id=group, subscribe=[topic], group_instance_id=instance))
    wait_until(lambda: c2.assignment() == all_tps, ctx.timeout_s, "the restarted static member's assignment",
               step=lambda: c2.poll(1, 0.2))
    check(time.monotonic() - start < ctx.timeout_s, "static member rejoin took too long")


@scenario("commit_offsets_metadata", "OffsetCommit with metadata, OffsetFetch from another member")
def commit_offsets_metadata(ctx: Context) -> None:
    topic = ctx.new_topic("commit", partitions=2)
    group = ctx.unique("g")
    ctx.setup.produce(topic, [Record(v, partition=0) for v in _values(10)])
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    c1 = ctx.track(ctx.client.consumer(group_id=group, assign=[tp0, tp1]))
    c1.commit({tp0: (7, "meta-7"), tp1: (0, "")})
    got = c1.committed([tp0, tp1])
    check(got.get(tp0) == (7, "meta-7"), f"committed p0 {got.get(tp0)} != (7, 'meta-7')")
    c1.close()
    c2 = ctx.track(ctx.client.consumer(group_id=group, assign=[tp0]))
    check(c2.committed([tp0]).get(tp0) == (7, "meta-7"), "a second consumer does not see the committed offset")
    first = poll_until(c2, 1, ctx.timeout_s)
    check(bool(first) and first[0].offset == 7, f"consumption did not resume at the committed offset: {first[:1]}")


@scenario("seek", "Seek to an offset and consume from there")
def seek(ctx: Context) -> None:
    topic = ctx.new_topic("seek")
    values = _values(10)
    ctx.setup.produce(topic, [Record(v, partition=0) for v in values])
    tp = TopicPartition(topic, 0)
    consumer = ctx.track(ctx.client.consumer(assign=[tp]))
    consumer.seek(tp, 7)
    got = poll_exactly(consumer, 3, ctx.timeout_s)
    check([m.offset for m in got] == [7, 8, 9], f"after seek(7) got offsets {[m.offset for m in got]}")
    consumer.seek(tp, 2)
    got = poll_until(consumer, 1, ctx.timeout_s)
    check(bool(got) and got[0].offset == 2 and got[0].value == values[2], f"after seek(2) got {got[:1]}")


@scenario("pause_resume", "Paused partitions return nothing until resumed")
def pause_resume(ctx: Context) -> None:
    topic = ctx.new_topic("pause", partitions=2)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    ctx.setup.produce(topic, [Record(v, partition=i % 2) for i, v in enumerate(_values(10))])
    consumer = ctx.track(ctx.client.consumer(assign=[tp0, tp1]))
    consumer.pause([tp0])
    # p1's five within the client's timeout (a first poll connects and finds offsets: over 2 s for the Java client on
    # a loaded machine), then a second more in which nothing of p0 may come
    got = poll_until(consumer, 5, ctx.timeout_s)
    got += poll_until(consumer, 1, 1.0)
    check({m.partition for m in got} == {1}, f"while p0 paused got partitions {sorted({m.partition for m in got})}")
    check(len(got) == 5, f"expected p1's 5 records while p0 paused, got {len(got)}")
    consumer.resume([tp0])
    got = poll_exactly(consumer, 5, ctx.timeout_s)
    check({m.partition for m in got} == {0}, "after resume expected p0's records")


@scenario("list_offsets", "ListOffsets earliest, latest and by timestamp")
def list_offsets(ctx: Context) -> None:
    topic = ctx.new_topic("lo")
    tp = TopicPartition(topic, 0)
    base = (int(time.time()) - 3600) * 1000
    ctx.setup.produce(topic, [Record(b"t%d" % i, partition=0, timestamp_ms=base + i * 1000) for i in range(3)])
    c = ctx.client
    check(c.list_offsets([tp], "earliest")[tp] == 0, "earliest != 0")
    check(c.list_offsets([tp], "latest")[tp] == 3, "latest != 3")
    for ts, want in ((base - 1, 0), (base + 500, 1), (base + 2000, 2), (base + 5000, -1)):
        got = c.list_offsets([tp], ts)[tp]
        check(got == want, f"offset for timestamp base+{ts - base}ms is {got}, expected {want}")


# -- admin ---------------------------------------------------------------------------------------

@scenario("admin_topics", "CreateTopics and DeleteTopics")
def admin_topics(ctx: Context) -> None:
    name = ctx.unique("adm")
    ctx.client.create_topic(name, 3, 1)
    ctx.wait_for_topic(name, 3)
    ctx.client.delete_topic(name)
    ctx.wait_for_topic(name, 3, present=False)


@scenario("admin_create_partitions", "CreatePartitions grows a topic")
def admin_create_partitions(ctx: Context) -> None:
    topic = ctx.new_topic("cp", partitions=1)
    ctx.client.create_partitions(topic, 3)
    ctx.wait_for_topic(topic, 3)
    ctx.setup.produce(topic, [Record(b"x", partition=2)])


@scenario("admin_configs", "DescribeConfigs and AlterConfigs for a topic; DescribeConfigs for a broker")
def admin_configs(ctx: Context) -> None:
    topic = ctx.new_topic("cfg", configs={"retention.ms": "3600000"})
    got = ctx.client.describe_configs("topic", topic)
    check(got.get("retention.ms") == "3600000", f"retention.ms is {got.get('retention.ms')!r}, expected 3600000")
    check("cleanup.policy" in got, "topic DescribeConfigs lacks defaults such as cleanup.policy")
    ctx.client.alter_topic_config(topic, {"retention.ms": "7200000"})
    wait_until(lambda: ctx.client.describe_configs("topic", topic).get("retention.ms") == "7200000",
               ctx.timeout_s, "retention.ms to read back as 7200000")
    node = min(ctx.setup.describe_cluster().brokers)
    broker = ctx.client.describe_configs("broker", str(node))
    check("message.max.bytes" in broker, "broker DescribeConfigs lacks message.max.bytes")


@scenario("admin_describe_cluster", "DescribeCluster: cluster id, controller, brokers")
def admin_describe_cluster(ctx: Context) -> None:
    view = ctx.client.describe_cluster()
    check(len(view.brokers) == ctx.cluster_size, f"expected {ctx.cluster_size} brokers, got {sorted(view.brokers)}")
    check(bool(view.cluster_id), "empty cluster id")
    check(view.controller_id in view.brokers, f"controller {view.controller_id} is not a listed broker")


@scenario("admin_delete_records", "DeleteRecords moves the log start offset")
def admin_delete_records(ctx: Context) -> None:
    topic = ctx.new_topic("dr")
    tp = TopicPartition(topic, 0)
    ctx.setup.produce(topic, [Record(v, partition=0) for v in _values(10)])
    low = ctx.client.delete_records({tp: 4})
    check(low.get(tp) == 4, f"low watermark after DeleteRecords is {low.get(tp)}, expected 4")
    check(ctx.setup.list_offsets([tp], "earliest")[tp] == 4, "earliest offset did not move to 4")
    consumer = ctx.track(ctx.setup.consumer(assign=[tp]))
    got = poll_until(consumer, 1, ctx.timeout_s)
    check(bool(got) and got[0].offset == 4, f"consumption from earliest starts at {got[:1]}")


@scenario("admin_log_dirs", "DescribeLogDirs lists each log dir with its partitions' sizes")
def admin_log_dirs(ctx: Context) -> None:
    topic = ctx.new_topic("ld", partitions=2)
    ctx.setup.produce(topic, [Record(b"x" * 100, partition=0) for _ in range(50)])
    dirs = ctx.client.describe_log_dirs()
    check(bool(dirs), "DescribeLogDirs lists no log dir")
    sizes = {tp: size for parts in dirs.values() for tp, size in parts.items() if tp.topic == topic}
    check(set(sizes) == {TopicPartition(topic, 0), TopicPartition(topic, 1)},
          f"the topic's partitions listed: {sorted(sizes)}")
    check(sizes[TopicPartition(topic, 0)] > 50 * 100, f"partition 0 size {sizes[TopicPartition(topic, 0)]}")
    check(sizes[TopicPartition(topic, 1)] == 0, f"empty partition 1 size {sizes[TopicPartition(topic, 1)]}")


@scenario("admin_reassignment", "AlterPartitionReassignments and ListPartitionReassignments (move, cancel)")
def admin_reassignment(ctx: Context) -> None:
    topic = ctx.new_topic("ra")
    tp = TopicPartition(topic, 0)
    ctx.setup.produce(topic, [Record(v, partition=0) for v in _values(20)])
    leader = ctx.setup.cluster([topic]).topics[topic][0]
    check(ctx.client.list_reassignments([tp]) == {}, "a partition nobody reassigns is listed as reassigning")
    brokers = sorted(ctx.setup.describe_cluster().brokers)
    target = [b for b in brokers if b != leader][:1] or [leader]
    check(ctx.client.alter_reassignments({tp: target}) == {tp: None}, f"reassignment to {target} refused")
    wait_until(lambda: ctx.client.list_reassignments() == {}, ctx.timeout_s * 3, "the reassignment to complete")
    wait_until(lambda: ctx.setup.cluster([topic]).topics[topic].get(0) == target[0], ctx.timeout_s,
               f"partition 0 to be led by broker {target[0]}")
    consumer = ctx.track(ctx.setup.consumer(assign=[tp]))
    got = poll_exactly(consumer, 20, ctx.timeout_s)
    check([m.value for m in got] == _values(20), "records lost or reordered by the reassignment")
    errors = ctx.client.alter_reassignments({tp: None})
    check(errors == {tp: "NO_REASSIGNMENT_IN_PROGRESS"}, f"cancelling nothing answered {errors}")
    errors = ctx.client.alter_reassignments({tp: [target[0], target[0]]})
    check(errors == {tp: "INVALID_REPLICA_ASSIGNMENT"}, f"a target repeating a broker answered {errors}")


@scenario("admin_groups", "ListGroups, DescribeGroups, DeleteGroups")
def admin_groups(ctx: Context) -> None:
    topic = ctx.new_topic("ag")
    group = ctx.unique("g")
    ctx.setup.produce(topic, [Record(b"x", partition=0)])
    member = ctx.setup.consumer(group_id=group, subscribe=[topic])
    try:
        got = poll_exactly(member, 1, ctx.timeout_s * 2)
        member.commit({TopicPartition(topic, 0): (got[0].offset + 1, "")})
        check(group in ctx.client.list_groups(), "ListGroups does not list an active group")
        desc = ctx.client.describe_group(group)
        check(desc.state == "Stable", f"active group state {desc.state!r}, expected Stable")
        check(desc.protocol_type == "consumer", f"protocol type {desc.protocol_type!r}")
        check(len(desc.members) == 1, f"expected 1 member, got {len(desc.members)}")
    finally:
        member.close()
    wait_until(lambda: ctx.client.describe_group(group).state == "Empty", ctx.timeout_s,
               "the group to become Empty after its member left")
    ctx.client.delete_group(group)
    wait_until(lambda: group not in ctx.client.list_groups(), ctx.timeout_s, "the deleted group to disappear")


# -- error paths ---------------------------------------------------------------------------------

@scenario("unknown_topic", "Metadata for an unknown topic (no auto-creation requested) reports it missing")
def unknown_topic(ctx: Context) -> None:
    name = ctx.unique("missing")
    view = ctx.client.cluster([name])
    check(name not in view.topics, f"unknown topic {name} reported as existing")
    check(name not in ctx.setup.cluster(None).topics, "a metadata request without auto-creation created the topic")


@scenario("auto_create_topics", "Producing to a new topic follows the broker's auto.create.topics.enable")
def auto_create_topics(ctx: Context) -> None:
    config = _broker_config(ctx)
    enabled = config.get("auto.create.topics.enable", "true") == "true"
    partitions = int(config.get("num.partitions", "1"))
    name = ctx.unique("auto")
    if enabled:
        ctx.client.produce(name, [Record(b"auto")], timeout_s=ctx.timeout_s)
        ctx.wait_for_topic(name, partitions)
        return
    try:
        ctx.client.produce(name, [Record(b"auto")], timeout_s=5.0)
    except (ProduceFailed, TimeoutError) as e:
        _ = e
    else:
        raise CheckFailed("produce to a missing topic succeeded with auto.create.topics.enable=false")
    check(name not in ctx.setup.cluster(None).topics, "topic was auto-created although disabled")


@scenario("not_leader", "Idempotent producer recovers exactly-once after a leadership move (NOT_LEADER_OR_FOLLOWER)")
def not_leader(ctx: Context) -> None:
    if ctx.cluster_size < 2:
        raise NeedsEnvironment("needs a cluster of at least 2 brokers (--cluster 3)")
    move = getattr(ctx.target, "move_leader", None)
    if move is None:
        raise NeedsEnvironment("target cannot move partition leadership (only --cluster N targets can)")
    topic = ctx.new_topic("nl", partitions=1, replication_factor=min(3, ctx.cluster_size))
    tp = TopicPartition(topic, 0)
    before, after = _values(50, "before"), _values(50, "after")
    # One idempotent producer across the move: its cached metadata names the old leader, and its
    # sequence numbers must continue on the new leader (producer state replicated with the log).
    producer = ctx.client.producer(acks=-1, idempotent=True)
    ctx.on_cleanup(producer.close)
    producer.send(topic, [Record(v, partition=0) for v in before])
    old = ctx.setup.cluster([topic]).topics[topic][0]
    move(tp)
    new = ctx.setup.cluster([topic]).topics[topic][0]
    check(new != old, f"leader still {old} after the move")
    producer.send(topic, [Record(v, partition=0) for v in after])
    consumer = ctx.track(ctx.setup.consumer(assign=[tp]))
    got = poll_exactly(consumer, len(before) + len(after), ctx.timeout_s)
    check([m.value for m in got] == before + after, "records lost, duplicated or reordered across the move")
    check([m.offset for m in got] == list(range(100)), "offsets not contiguous across the move")


# Registered last (their columns come after the others): compat.transactions builds on this module's helpers.
import compat.transactions  # noqa: E402, F401
