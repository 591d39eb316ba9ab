"""ConsumerGroupDescribe and ShareGroupDescribe with an authorizer, over a real socket with our codec: a group
is hidden (TOPIC_AUTHORIZATION_FAILED) only for a topic of its members' assignments the principal may not
DESCRIBE, per group; once allowed the same group is answered in full, and a topic named only in a
subscription refuses nothing (Kafka 4.0/4.1, KAFKA-18813/18817)."""

from __future__ import annotations

from typing import Any

from broker.apis.consumer_group_describe import TOPICS_DENIED_MESSAGE
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import allow_topic_describe, deny_topic_describe, partial
from .group_support import ConsumerMember
from .share_support import assigned_member, topic_id
from .support import Brokers

CGD = request_class(ApiKey.CONSUMER_GROUP_DESCRIBE)
SGD = request_class(ApiKey.SHARE_GROUP_DESCRIBE)
NO_OPERATIONS = -(2**31)
DESCRIBE_BIT = 1 << 8


def hidden(group: Any, group_id: str) -> None:
    """Kafka's answer for a group hidden by its topics: the code, the message, and nothing else."""
    assert (group.group_id, group.error_code, group.error_message) == (
        group_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPICS_DENIED_MESSAGE), group
    assert (group.group_state, group.group_epoch, group.assignment_epoch, group.assignor_name, group.members,
            group.authorized_operations) == ("", 0, 0, "", [], NO_OPERATIONS), group


def consumer_described(b: Brokers, port: int, *groups: str) -> list[Any]:
    return b.call(CGD[0](group_ids=list(groups), include_authorized_operations=True), port).groups


def share_described(b: Brokers, port: int, *groups: str) -> list[Any]:
    return b.call(SGD[1](group_ids=list(groups), include_authorized_operations=True), port).groups


def assert_full_consumer_group(b: Brokers, port: int, group: Any, group_id: str, topic: str) -> None:
    assert (group.group_id, group.error_code, group.error_message, group.group_state) == (
        group_id, ErrorCode.NONE, None, "Stable"), group
    assert group.group_epoch >= 1 and group.assignment_epoch == group.group_epoch, group
    assert group.assignor_name == "uniform" and group.authorized_operations & DESCRIBE_BIT, group
    [member] = group.members
    assert (member.member_id, member.subscribed_topic_names) == ("member-1", [topic]), member
    expected = [(topic_id(b, topic, port), topic, [0, 1])]
    for assignment in (member.assignment, member.target_assignment):
        assert [(t.topic_id, t.topic_name, t.partitions) for t in assignment.topic_partitions] == expected, member


def assert_full_share_group(b: Brokers, port: int, group: Any, group_id: str, topic: str) -> None:
    assert (group.group_id, group.error_code, group.error_message, group.group_state) == (
        group_id, ErrorCode.NONE, None, "Stable"), group
    assert group.group_epoch >= 1 and group.assignor_name == "simple", group
    assert group.authorized_operations & DESCRIBE_BIT, group
    [member] = group.members
    assert (member.member_id, member.subscribed_topic_names) == ("member-1", [topic]), member
    assert [(t.topic_id, t.topic_name, t.partitions) for t in member.assignment.topic_partitions] == [
        (topic_id(b, topic, port), topic, [0, 1])], member


def test_a_consumer_group_is_hidden_only_while_an_assigned_topic_is_denied(brokers: Brokers) -> None:
    port = partial(brokers)
    for topic in ("cgd-az-open", "cgd-az-hidden"):
        brokers.topic(topic, 2, port=port)
        ConsumerMember.join(brokers, topic, topics=(topic,), port=port)  # the group is named as its topic
    deny_topic_describe(brokers, port, "cgd-az-hidden")
    try:
        denied, allowed = consumer_described(brokers, port, "cgd-az-hidden", "cgd-az-open")
        hidden(denied, "cgd-az-hidden")
        assert_full_consumer_group(brokers, port, allowed, "cgd-az-open", "cgd-az-open")
    finally:
        allow_topic_describe(brokers, port, "cgd-az-hidden")
    [again] = consumer_described(brokers, port, "cgd-az-hidden")
    assert_full_consumer_group(brokers, port, again, "cgd-az-hidden", "cgd-az-hidden")


def test_a_consumer_groups_subscription_alone_refuses_nothing(brokers: Brokers) -> None:
    # Subscribed to a topic that does not exist yet: nothing is assigned, so nothing is checked (Kafka checks
    # the assignments, not the subscriptions) -- even once the topic's DESCRIBE is denied.
    port = partial(brokers)
    ConsumerMember.join(brokers, "cgd-az-subscribed", topics=("cgd-az-later",), port=port)
    deny_topic_describe(brokers, port, "cgd-az-later")
    try:
        [group] = consumer_described(brokers, port, "cgd-az-subscribed")
    finally:
        allow_topic_describe(brokers, port, "cgd-az-later")
    assert (group.error_code, group.error_message) == (ErrorCode.NONE, None), group
    assert [m.subscribed_topic_names for m in group.members] == [["cgd-az-later"]], group


def test_a_share_group_is_hidden_only_while_an_assigned_topic_is_denied(brokers: Brokers) -> None:
    port = partial(brokers)
    for topic in ("sgd-az-open", "sgd-az-hidden"):
        brokers.topic(topic, 2, port=port)
        assigned_member(brokers, topic, topic, port=port)
    deny_topic_describe(brokers, port, "sgd-az-hidden")
    try:
        denied, allowed = share_described(brokers, port, "sgd-az-hidden", "sgd-az-open")
        hidden(denied, "sgd-az-hidden")
        assert_full_share_group(brokers, port, allowed, "sgd-az-open", "sgd-az-open")
    finally:
        allow_topic_describe(brokers, port, "sgd-az-hidden")
    [again] = share_described(brokers, port, "sgd-az-hidden")
    assert_full_share_group(brokers, port, again, "sgd-az-hidden", "sgd-az-hidden")


def test_without_an_authorizer_nothing_is_checked(brokers: Brokers) -> None:
    brokers.topic("cgd-az-plain", 2)
    ConsumerMember.join(brokers, "cgd-az-plain", topics=("cgd-az-plain",))
    [group] = consumer_described(brokers, brokers.single.port, "cgd-az-plain")
    assert_full_consumer_group(brokers, brokers.single.port, group, "cgd-az-plain", "cgd-az-plain")
