"""TxnOffsetCommit: every code of `broker.apis.txn_offset_commit.ERRORS`, over a real socket with our codec,
against the real group and transaction coordinators (KIP-890 verification included)."""

from __future__ import annotations

from typing import Any

from broker.apis import txn_offset_commit
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from . import group_support
from .acl_support import DENIED_GROUP, DENIED_TOPIC, denied, partial
from .group_support import Member, coordinator_ready, small_offsets_topic
from .support import Brokers, Producer, error_path_test
from .txn_support import Txn

Req = request_class(ApiKey.TXN_OFFSET_COMMIT)
ADD_OFFSETS = request_class(ApiKey.ADD_OFFSETS_TO_TXN)
Topic = Req.TxnOffsetCommitRequestTopic
TOPIC = "txn-commit-plain"


def send(b: Brokers, txn: Txn, group: str, *, topic: str = TOPIC, member: Member | None = None,
         member_id: str | None = None, generation: int | None = None, instance: str | None = None,
         producer_epoch: int | None = None, txn_id: str | None = None, metadata: str = "", version: int = 3) -> Any:
    return b.call(Req[version](
        transactional_id=txn.txn_id if txn_id is None else txn_id, group_id=group, producer_id=txn.producer_id,
        producer_epoch=txn.producer_epoch if producer_epoch is None else producer_epoch,
        generation_id=generation if generation is not None else member.generation if member else -1,
        member_id=member_id if member_id is not None else member.member_id if member else "",
        group_instance_id=instance, topics=[Topic(name=topic, partitions=[Topic.TxnOffsetCommitRequestPartition(
            partition_index=0, committed_offset=1, committed_leader_epoch=-1, committed_metadata=metadata)])]),
        txn.port)


def in_txn(b: Brokers, txn_id: str, group: str, port: int | None = None) -> Txn:
    """A transaction to which AddOffsetsToTxn added `group`'s offsets partition (so verification passes)."""
    b.topic(TOPIC, port=port)
    coordinator_ready(b, port or b.single.port, group)
    txn = Txn.init(b, txn_id, port)
    added = b.call(ADD_OFFSETS[3](transactional_id=txn_id, producer_id=txn.producer_id,
                                  producer_epoch=txn.producer_epoch, group_id=group), port)
    assert added.error_code == ErrorCode.NONE, added
    return txn


def on_port(b: Brokers, port: int, group: str) -> Any:
    b.topic(TOPIC, port=port)
    return send(b, Txn("txn-commit-elsewhere", 1, 0, port), group)


def member_of(b: Brokers, group: str, instance: str | None = None) -> tuple[Txn, Member]:
    member = Member.join(b, group, instance=instance)
    return in_txn(b, f"{group}-txn", group), member


def unknown_member(b: Brokers) -> Any:
    txn, member = member_of(b, "txn-commit-unknown")
    return send(b, txn, member.group, member_id="nobody", generation=member.generation)


def illegal_generation(b: Brokers) -> Any:
    txn, member = member_of(b, "txn-commit-generation")
    return send(b, txn, member.group, member=member, generation=member.generation + 5)


def fenced_instance(b: Brokers) -> Any:
    txn, member = member_of(b, "txn-commit-static", instance="txn-static-1")
    return send(b, txn, member.group, member_id="someone-else", generation=member.generation,
                instance="txn-static-1")


def not_added(b: Brokers, version: int = 3) -> Any:
    # KIP-890: the group's offsets partition was never added to the transaction (no AddOffsetsToTxn)
    b.topic(TOPIC)
    group = f"txn-commit-not-added-{version}"
    coordinator_ready(b, b.single.port, group)
    return send(b, Txn.init(b, group), group, version=version)


PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: lambda b: send(b, in_txn(b, "txn-commit-t", "txn-commit-g"),
                                                         "txn-commit-g", topic="txn-commit-missing"),
    ErrorCode.INVALID_GROUP_ID: lambda b: send(b, in_txn(b, "txn-commit-t", "txn-commit-g"), ""),
    ErrorCode.NOT_COORDINATOR: lambda b: on_port(b, group_support.not_coordinator(b), "txn-commit-any"),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: lambda b: on_port(
        b, group_support.loading(b, "txn-commit-loading"), "txn-commit-loading"),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: on_port(b, group_support.shut_down(b), "txn-commit-any"),
    ErrorCode.INVALID_TXN_STATE: not_added,
    ErrorCode.TRANSACTION_ABORTABLE: lambda b: not_added(b, version=4),  # a client that knows it
    # the transaction coordinator fences the epoch (PRODUCER_FENCED, heard as INVALID_PRODUCER_EPOCH)
    ErrorCode.INVALID_PRODUCER_EPOCH: lambda b: send(b, in_txn(b, "txn-commit-t", "txn-commit-g"), "txn-commit-g",
                                                     producer_epoch=7),
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: lambda b: send(b, in_txn(b, "txn-commit-t", "txn-commit-g"),
                                                          "txn-commit-g", txn_id="txn-commit-never-initialized"),
    ErrorCode.UNKNOWN_MEMBER_ID: unknown_member,
    ErrorCode.ILLEGAL_GENERATION: illegal_generation,
    ErrorCode.FENCED_INSTANCE_ID: fenced_instance,
    ErrorCode.OFFSET_METADATA_TOO_LARGE: lambda b: send(b, in_txn(b, "txn-commit-t", "txn-commit-g"),
                                                        "txn-commit-g", metadata="m" * 5000),
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: lambda b: send(
        b, in_txn(b, "txn-commit-large", "txn-commit-large", port=small_offsets_topic(b)), "txn-commit-large",
        metadata="m" * 3000),
}

def commit_raw(b: Brokers, port: int, group: str, topic: str) -> Any:
    partition = Topic.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                                      committed_metadata="")
    return b.call(Req[3](transactional_id="acl-txn", group_id=group, producer_id=1, producer_epoch=0, generation_id=-1,
                         member_id="", group_instance_id=None, topics=[Topic(name=topic, partitions=[partition])]),
                  port)

PRODUCERS.update({
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: commit_raw(b, denied(b), "any-group", "any-topic"),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: commit_raw(b, partial(b), DENIED_GROUP, "any-topic"),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: lambda b: commit_raw(b, partial(b), "acl-group", DENIED_TOPIC),
})

test_errors = error_path_test(txn_offset_commit, PRODUCERS)
