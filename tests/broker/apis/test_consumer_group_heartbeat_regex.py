"""ConsumerGroupHeartbeat v1 regex subscriptions over a real socket, as Kafka 4.0's coordinator answers them: RE2
syntax (INVALID_REGULAR_EXPRESSION with Kafka's message), whole-name matches over every topic including
internal ones, and only the topics the member may DESCRIBE when an authorizer is on."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.errors import ErrorCode

from .acl_support import partial
from .group_support import coordinator_ready
from .share_support import topic_id
from .support import Brokers
from .test_consumer_group_heartbeat_errors import send


def assigned(response: Any) -> dict[Any, list[int]]:
    assert response.error_code == ErrorCode.NONE, response
    return {t.topic_id: sorted(t.partitions) for t in response.assignment.topic_partitions}


@pytest.mark.parametrize("regex, description", [
    ("cgh-rx-(?!x).*", "invalid or unsupported Perl syntax"),  # a negative lookahead
    (r"(cgh)-rx-\1", "invalid escape sequence"),  # a backreference
    ("cgh-rx-(", "missing closing )"),
])
def test_an_invalid_regex_is_refused_with_kafkas_message(brokers: Brokers, regex: str, description: str) -> None:
    coordinator_ready(brokers, brokers.single.port, "cgh-rx-invalid")
    resp = send(brokers, "cgh-rx-invalid", regex=regex)
    assert (resp.error_code, resp.error_message, resp.member_epoch) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}.", 0)
    # Nothing was applied: the group does not exist.
    assert send(brokers, "cgh-rx-invalid", epoch=1).error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_regex_matches_whole_names_in_re2_syntax_internal_topics_included(brokers: Brokers) -> None:
    for name in ("cgh-rx-a", "cgh-rx-bc", "cgh-rx-1", "xcgh-rx-a"):
        brokers.topic(name, 2)
    coordinator_ready(brokers, brokers.single.port, "cgh-rx-match")
    # \pL (a Unicode letter) is RE2 syntax Python's `re` refuses; the match is of the whole name.
    resp = send(brokers, "cgh-rx-match", regex=r"cgh-rx-\pL+|__consumer_offsets")
    ids = assigned(resp)
    expected = {topic_id(brokers, n) for n in ("cgh-rx-a", "cgh-rx-bc", "__consumer_offsets")}
    assert set(ids) == expected
    assert ids[topic_id(brokers, "cgh-rx-a")] == [0, 1]


def test_a_regex_resolves_only_to_topics_the_member_may_describe(brokers: Brokers) -> None:
    port = partial(brokers)  # every principal is denied on topics prefixed "denied-"
    brokers.topic("cgh-rx-acl", 2, port=port)
    brokers.topic("denied-cgh-rx-acl", 2, port=port)
    coordinator_ready(brokers, port, "cgh-rx-acl")
    resp = send(brokers, "cgh-rx-acl", regex="(denied-)?cgh-rx-acl", port=port)
    assert assigned(resp) == {topic_id(brokers, "cgh-rx-acl", port): [0, 1]}
