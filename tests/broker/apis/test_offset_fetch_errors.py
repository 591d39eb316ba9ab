"""OffsetFetch: every code of `broker.apis.offset_fetch.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from typing import Any

from broker.apis import offset_fetch
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import DENIED_TOPIC, denied, partial
from .group_support import ConsumerMember, coordinator_ready, loading, not_coordinator, shut_down
from .support import Brokers, Producer, error_path_test
from .txn_support import Txn

Req = request_class(ApiKey.OFFSET_FETCH)


def send(b: Brokers, group: str, port: int | None = None) -> Any:
    return b.call(Req[7](group_id=group, topics=None, require_stable=False), port)


def pending_transactional_commit(b: Brokers) -> Any:
    """KIP-447: a transaction committed offsets for the group and has not ended; a stable fetch of them must
    wait for its marker."""
    topic, group = b.topic("fetch-txn-plain"), "fetch-unstable"
    coordinator_ready(b, b.single.port, group)
    txn = Txn.init(b, "fetch-unstable-txn")
    add = request_class(ApiKey.ADD_OFFSETS_TO_TXN)
    added = b.call(add[3](transactional_id=txn.txn_id, producer_id=txn.producer_id,
                          producer_epoch=txn.producer_epoch, group_id=group))
    assert added.error_code == ErrorCode.NONE, added
    commit = request_class(ApiKey.TXN_OFFSET_COMMIT)
    T = commit.TxnOffsetCommitRequestTopic
    committed = b.call(commit[3](
        transactional_id=txn.txn_id, group_id=group, producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
        generation_id=-1, member_id="", group_instance_id=None, topics=[T(name=topic, partitions=[
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=5, committed_leader_epoch=-1,
                                              committed_metadata="")])]))
    assert committed.topics[0].partitions[0].error_code == ErrorCode.NONE, committed
    return b.call(Req[7](group_id=group, topics=[Req.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
                         require_stable=True))


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, "g" * 40000),
    ErrorCode.NOT_COORDINATOR: lambda b: send(b, "fetch-any", port=not_coordinator(b)),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: send(b, "fetch-loading", port=loading(b, "fetch-loading")),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: send(b, "fetch-any", port=shut_down(b)),
    ErrorCode.UNSTABLE_OFFSET_COMMIT: pending_transactional_commit,
    ErrorCode.UNKNOWN_MEMBER_ID: lambda b: fetch_as_member(b, "fetch-cg-unknown", "nobody", 0),
    ErrorCode.STALE_MEMBER_EPOCH: lambda b: fetch_as_member(b, "fetch-cg-stale", "member-1", 5),
}


def fetch_as_member(b: Brokers, group: str, member_id: str, epoch_delta: int) -> Any:
    """OffsetFetch v9 as a KIP-848 consumer group member would, with a member id and epoch."""
    member = ConsumerMember.join(b, group)
    return b.call(Req[9](require_stable=False, groups=[Req.OffsetFetchRequestGroup(
        group_id=group, member_id=member_id, member_epoch=member.epoch + epoch_delta, topics=None)]))

def fetch_denied_topic(b: Brokers) -> Any:
    port = partial(b)
    coordinator_ready(b, port, "fetch-acl")
    return b.call(Req[7](group_id="fetch-acl", require_stable=False, topics=[
        Req.OffsetFetchRequestTopic(name=DENIED_TOPIC, partition_indexes=[0])]), port)

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: send(b, "fetch-denied", denied(b)),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: fetch_denied_topic,
})

test_errors = error_path_test(offset_fetch, PRODUCERS)
