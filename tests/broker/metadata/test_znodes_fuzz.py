"""Znode contents are untrusted: every decoder returns a value or raises MetadataCorruptError."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from broker.metadata import znodes
from broker.metadata.types import MetadataCorruptError
from storage.values import TopicPartition

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8) | st.floats(allow_nan=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=20,
)
keys = st.sampled_from(
    [
        "version",
        "leader",
        "leader_epoch",
        "isr",
        "controller_epoch",
        "leader_recovery_state",
        "partitions",
        "topic_id",
        "endpoints",
        "host",
        "port",
        "jmx_port",
        "brokerid",
        "id",
        "config",
        "entity_path",
        "topic",
        "partition",
        "replicas",
        "block_start",
        "block_end",
        "broker",
        "listener_security_protocol_map",
        "rack",
    ]
)
plausible = st.dictionaries(keys, json_values, max_size=8).map(lambda d: json.dumps(d).encode())
payloads = st.binary(max_size=64) | plausible

DECODERS = [
    lambda b: znodes.decode_partition_state("t", 0, b, 0),
    lambda b: znodes.decode_topic("t", b),
    lambda b: znodes.decode_broker(1, b),
    znodes.decode_controller,
    znodes.decode_controller_epoch,
    znodes.decode_cluster_id,
    lambda b: znodes.decode_topic_config("t", b),
    znodes.decode_config_change,
    lambda b: znodes.decode_partition_list(b, "x"),
    znodes.decode_reassignment,
    znodes.decode_producer_id_block,
]


@settings(max_examples=200, deadline=None)
@given(payloads)
def test_decoders_never_raise_anything_but_metadata_corrupt(data):
    for decode in DECODERS:
        try:
            decode(data)
        except MetadataCorruptError:
            pass


def test_non_ascii_digits_are_rejected_not_crashing():
    data = b'{"version":5,"endpoints":["PLAINTEXT://h:1"],"jmx_port":-1,"timestamp":"\xc2\xb2"}'
    assert znodes.decode_broker(1, data).timestamp_ms == -1
    assert not znodes.is_decimal("\u00b2") and znodes.is_decimal("0000000012")


@settings(max_examples=100, deadline=None)
@given(
    st.integers(-1, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.lists(st.integers(0, 2**31 - 1), max_size=6),
    st.integers(0, 2**31 - 1),
    st.sampled_from([0, 1]),
)
def test_partition_state_round_trips(leader, leader_epoch, isr, controller_epoch, recovery):
    state = znodes.LeaderAndIsr(leader, leader_epoch, tuple(isr), controller_epoch, 5, recovery)
    assert znodes.decode_partition_state("t", 0, znodes.encode_partition_state(state), 5) == state


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=10), st.integers(0, 1000)), max_size=5))
def test_partition_lists_round_trip(items):
    partitions = [TopicPartition(t, p) for t, p in items]
    assert znodes.decode_partition_list(znodes.encode_partition_list(partitions), "x") == partitions
