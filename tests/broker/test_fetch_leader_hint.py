"""Fetch's current-leader hint (KIP-951) as Kafka 3.7 sends it, through the real codec, no sockets.

Kafka fills `current_leader` on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH only from Fetch v16, and adds
the leader's endpoint to `node_endpoints` when the leader is a live broker; below v16 the field (tagged,
from v12) stays unset. The hint is Kafka's getCurrentLeader, as for Produce: this broker's partition state when
it hosts the partition, else the metadata cache (a broker the partition has moved away from still points the
consumer to the leader). kafka-python fetches at v12 and moves its cached leader to the hinted one: had we
hinted there, it would route the next fetch to a broker its metadata may not list yet.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from broker.apis import fetch
from broker.metadata.metadata_cache import BrokerEndpoint, MetadataCache, PartitionMetadata
from broker.server.delayed_fetch import FetchPartitionData
from broker.server.fetch_session import CachedPartition
from protocol import ApiKey, ErrorCode, decode_request, decode_response, encode_request, encode_response, request_class
from storage import TopicPartition

TP = TopicPartition("t", 0)


def fetch_request(version: int) -> Any:
    cls = request_class(ApiKey.FETCH)
    t = cls.FetchTopic
    fields: dict[str, Any] = {"topic": "t"} if version < 13 else {"topic_id": uuid.UUID(int=5)}
    request = cls[version](
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, rack_id="",
        topics=[t(**fields, partitions=[t.FetchPartition(partition=0, current_leader_epoch=3, fetch_offset=0,
                                                         last_fetched_epoch=-1, log_start_offset=-1,
                                                         partition_max_bytes=1 << 20)])],
        forgotten_topics_data=[])
    request.with_header(correlation_id=1, client_id="unit")
    return decode_request(encode_request(request))


def answer(version: int, leader: int, listed: list[int], hosted: dict[TopicPartition, Any] | None = None,
           error: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER) -> Any:
    cache = MetadataCache(1, "cluster")
    cache.controller_epoch = 1
    cache.set_brokers([BrokerEndpoint(b, "127.0.0.1", 9000 + b, None) for b in listed])
    cache.update_partition("t", uuid.UUID(int=5), _partition_metadata(leader))
    server = SimpleNamespace(metadata_cache=cache, replica_manager=SimpleNamespace(partitions=hosted or {}))
    request = fetch_request(version)
    ctx = SimpleNamespace(server=server, listener=None)  # a request from inside the broker: no listener
    data = FetchPartitionData(error)
    response = fetch._response(ctx, request, None, False, {TP: CachedPartition(0, 1 << 20)},  # type: ignore[arg-type]
                               [(TP, data)], [])
    response.with_header(correlation_id=1)
    return decode_response(encode_response(response), ApiKey.FETCH, version)


def _partition_metadata(leader: int) -> PartitionMetadata:
    return PartitionMetadata(0, leader=leader, leader_epoch=4, replicas=(1, leader), isr=(1, leader))


@pytest.mark.parametrize("version", [12, 13, 15])
def test_below_v16_no_hint_is_sent(version: int) -> None:
    [topic] = answer(version, leader=2, listed=[1, 2]).responses
    [partition] = topic.partitions
    assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert partition.current_leader is None  # the tagged field is not sent


@pytest.mark.parametrize("version", [16, 17])
def test_from_v16_the_hint_comes_with_the_leaders_endpoint(version: int) -> None:
    response = answer(version, leader=2, listed=[1, 2])
    [partition] = response.responses[0].partitions
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (2, 4)
    assert [(n.node_id, n.host, n.port) for n in response.node_endpoints] == [(2, "127.0.0.1", 9002)]


def test_a_leader_that_is_not_a_live_broker_is_hinted_without_an_endpoint() -> None:
    response = answer(16, leader=3, listed=[1, 2])
    [partition] = response.responses[0].partitions
    assert partition.current_leader.leader_id == 3
    assert response.node_endpoints == []


def test_a_partition_this_broker_no_longer_hosts_is_hinted_from_the_metadata_cache() -> None:
    response = answer(16, leader=2, listed=[1, 2], hosted={})
    [partition] = response.responses[0].partitions
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (2, 4)


def test_a_hosted_partition_is_hinted_from_its_own_state_before_the_cache() -> None:
    # The controller's LeaderAndIsr reached this broker before UpdateMetadata refreshed its cache.
    hosted = {TP: SimpleNamespace(leader_id=1, leader_epoch=7)}
    response = answer(16, leader=2, listed=[1, 2], hosted=hosted, error=ErrorCode.FENCED_LEADER_EPOCH)
    [partition] = response.responses[0].partitions
    assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (1, 7)
    assert [n.node_id for n in response.node_endpoints] == [1]


def test_other_errors_carry_no_hint() -> None:
    response = answer(16, leader=2, listed=[1, 2], error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    [partition] = response.responses[0].partitions
    assert partition.current_leader is None  # the tagged field is not sent
    assert response.node_endpoints == []
