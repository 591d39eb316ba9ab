"""The metadata cache as Metadata and DescribeCluster answer from it, through the real codec, no sockets.

Kafka answers from one snapshot, taken from the controller's UpdateMetadata: the controller, the live
brokers and the partition states. Before the first UpdateMetadata it lists no brokers, and no response
names a broker (leader or controller) that it does not list. Ours listed itself from start-up and learned
the controller from the ZooKeeper watch, so a broker that had just joined a cluster answered Metadata with
brokers [1] and controller_id 0. kafka-python's admin client bootstrapped there keeps that broker list;
it sends CreateTopics to the controller id it reads and looks it up in that list: `UnknownBrokerIdError:
0`, the clean-clone CI flake in test_not_leader_in_cluster[kafka-python] (that cluster's brokers start one
after the other and the test begins as the last one starts; reproduced 4 times in 5 with kafka-python's
admin bootstrapped at a broker as it joined, before this fix). An empty broker list makes the client
retry its bootstrap until the broker knows the cluster.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from broker.apis import describe_cluster, metadata
from broker.apis.base import RequestContext
from broker.metadata.metadata_cache import BrokerEndpoint, MetadataCache, PartitionMetadata
from protocol import ApiKey, ErrorCode, decode_request, decode_response, encode_request, encode_response, request_class

TOPIC_ID = uuid.UUID(int=7)


def endpoint(broker_id: int) -> BrokerEndpoint:
    return BrokerEndpoint(broker_id, "127.0.0.1", 9000 + broker_id)


def call(cache: MetadataCache, request: Any) -> Any:
    """Encode the request, decode it as the broker does, run the handler, and read its answer back."""
    request.with_header(correlation_id=3, client_id="unit")
    decoded = decode_request(encode_request(request))
    server = SimpleNamespace(metadata_cache=cache, config={"auto.create.topics.enable": False},
                             auto_create_topics=lambda names: None, authorizer=None)
    ctx = RequestContext(server, None, request.API_KEY, request.API_VERSION, 3, "unit")  # type: ignore[arg-type]
    handler = metadata if decoded.API_KEY == ApiKey.METADATA else describe_cluster
    response = handler.handle(ctx, decoded)
    response.with_header(correlation_id=3)
    return decode_response(encode_response(response), request.API_KEY, request.API_VERSION)


def metadata_request(version: int, topics: list[str] | None) -> Any:
    cls = request_class(ApiKey.METADATA)
    fields: dict[str, Any] = {"topics": None if topics is None else
                              [cls.MetadataRequestTopic(name=t) for t in topics]}
    if version == 0 and topics is None:
        fields["topics"] = []  # v0 says "all topics" with an empty list
    if version >= 4:
        fields["allow_auto_topic_creation"] = False
    if 8 <= version <= 10:
        fields["include_cluster_authorized_operations"] = False
    if version >= 8:
        fields["include_topic_authorized_operations"] = False
    return cls[version](**fields)


def named_ids(response: Any) -> set[int]:
    ids = {p.leader_id for t in response.topics for p in t.partitions} - {-1}
    if response.API_VERSION >= 1 and response.controller_id != -1:
        ids.add(response.controller_id)
    return ids


def just_joined() -> MetadataCache:
    """Broker 1 a moment after it joined, before the controller's first UpdateMetadata: it knows its own
    endpoint (start-up), the controller (the ZooKeeper watch says 0), and, say, a partition led by 0."""
    cache = MetadataCache(1, "cluster")
    cache.set_brokers([endpoint(1)])
    cache.controller_id = 0
    cache.update_partition("t", TOPIC_ID, PartitionMetadata(0, leader=0, leader_epoch=4, replicas=(0, 1),
                                                            isr=(0, 1)))
    return cache


def update_metadata(cache: MetadataCache, controller_id: int, brokers: list[int]) -> None:
    """What server.apply_update_metadata does to the cache."""
    cache.controller_epoch = 1
    cache.controller_id = controller_id
    cache.set_brokers([endpoint(b) for b in brokers])


@pytest.mark.parametrize("version", range(0, 13))
def test_before_the_first_update_metadata_no_broker_is_listed_or_named(version: int) -> None:
    response = call(just_joined(), metadata_request(version, None if version else []))
    assert response.brokers == []
    assert named_ids(response) == set()
    if version >= 1:
        assert response.controller_id == -1
    [topic] = response.topics
    [partition] = topic.partitions
    assert (partition.error_code, partition.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
    assert partition.leader_epoch == (4 if version >= 7 else -1)  # the field exists from v7


@pytest.mark.parametrize("version", range(0, 13))
def test_no_response_names_a_broker_it_does_not_list(version: int) -> None:
    cache = just_joined()
    update_metadata(cache, controller_id=2, brokers=[1, 2])
    cache.controller_id = 0  # the ZooKeeper watch, ahead of the UpdateMetadata that will list broker 0
    response = call(cache, metadata_request(version, None if version else []))
    listed = {b.node_id for b in response.brokers}
    assert listed == {1, 2}
    assert named_ids(response) <= listed
    if version >= 1:
        assert response.controller_id == -1
    [partition] = response.topics[0].partitions
    assert (partition.error_code, partition.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)


def test_once_update_metadata_lists_them_the_controller_and_leader_are_named() -> None:
    cache = just_joined()
    update_metadata(cache, controller_id=0, brokers=[0, 1])
    response = call(cache, metadata_request(12, ["t"]))
    assert response.controller_id == 0
    [partition] = response.topics[0].partitions
    assert (partition.error_code, partition.leader_id, partition.replica_nodes, partition.isr_nodes) == (
        ErrorCode.NONE, 0, [0, 1], [0, 1])
    assert named_ids(response) <= {b.node_id for b in response.brokers}


def test_dead_replicas_are_listed_from_v1_and_dropped_with_replica_not_available_at_v0() -> None:
    cache = MetadataCache(1, "cluster")
    update_metadata(cache, controller_id=1, brokers=[1, 2])
    cache.update_partition("t", TOPIC_ID, PartitionMetadata(0, leader=1, leader_epoch=2, replicas=(1, 2, 3),
                                                            isr=(1, 2), offline_replicas=(3,)))
    cache.update_partition("t", TOPIC_ID, PartitionMetadata(1, leader=3, leader_epoch=5, replicas=(3, 1),
                                                            isr=(3,), offline_replicas=(3,)))
    v1 = call(cache, metadata_request(1, ["t"])).topics[0].partitions
    assert [(p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes) for p in v1] == [
        (ErrorCode.NONE, 1, [1, 2, 3], [1, 2]), (ErrorCode.LEADER_NOT_AVAILABLE, -1, [3, 1], [3])]
    v0 = call(cache, metadata_request(0, ["t"])).topics[0].partitions
    assert [(p.error_code, p.leader_id, p.replica_nodes, p.isr_nodes) for p in v0] == [
        (ErrorCode.REPLICA_NOT_AVAILABLE, 1, [1, 2], [1, 2]), (ErrorCode.LEADER_NOT_AVAILABLE, -1, [1], [])]


def test_describe_cluster_lists_the_snapshot_and_names_only_a_listed_controller() -> None:
    request = request_class(ApiKey.DESCRIBE_CLUSTER)[1](include_cluster_authorized_operations=False,
                                                         endpoint_type=1)
    cache = just_joined()
    response = call(cache, request)
    assert (response.brokers, response.controller_id) == ([], -1)
    update_metadata(cache, controller_id=2, brokers=[1, 2])
    cache.controller_id = 0
    response = call(cache, request)
    assert ([b.broker_id for b in response.brokers], response.controller_id) == ([1, 2], -1)
    update_metadata(cache, controller_id=0, brokers=[0, 1, 2])
    assert call(cache, request).controller_id == 0


def test_brokers_are_listed_with_the_endpoints_of_the_clients_listener() -> None:
    """UpdateMetadata carries every listener of every broker; a client sees the endpoints of the listener it
    came in on, and a broker without that listener is left out (Kafka's getAliveBrokerNodes(listenerName))."""
    from broker.controller.requests import build_update_metadata, parse_update_metadata
    from broker.metadata.metadata_cache import ListenerEndpoint

    def broker(b: int, *names: str) -> BrokerEndpoint:
        listeners = tuple(ListenerEndpoint(n, f"h{b}.{n.lower()}", 9000 + 10 * b + i, "SSL" if n == "SSL" else
                                           "PLAINTEXT") for i, n in enumerate(names))
        return BrokerEndpoint(b, listeners[0].host, listeners[0].port, None, listeners)

    sent = [broker(1, "INTERNAL", "SSL"), broker(2, "INTERNAL")]
    request = build_update_metadata(8, 1, 1, sent, [])
    request.with_header(correlation_id=1, client_id="c")
    brokers, _ = parse_update_metadata(decode_request(encode_request(request)), "INTERNAL")
    assert brokers == sent
    cache = MetadataCache(1, "cluster")
    cache.controller_epoch = 1
    cache.set_brokers(brokers)
    assert {b: (e.host, e.port) for b, e in cache.listed_brokers("SSL").items()} == {1: ("h1.ssl", 9011)}
    assert {b: (e.host, e.port) for b, e in cache.listed_brokers("INTERNAL").items()} == {
        1: ("h1.internal", 9010), 2: ("h2.internal", 9020)}
    assert cache.listed_brokers() == {1: sent[0], 2: sent[1]}
