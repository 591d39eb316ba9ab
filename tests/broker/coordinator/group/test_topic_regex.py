"""KIP-848 subscription regexes below the wire: RE2 syntax with RE2/J's error descriptions, whole-name matching,
and the coordinator's resolution (INVALID_REGULAR_EXPRESSION, DESCRIBE filtering, refresh on topic changes)."""

from __future__ import annotations

import re
import uuid

import pytest

from broker.coordinator.group import GroupCoordinatorConfig
from broker.coordinator.group.errors import GroupErrorCode as E
from broker.coordinator.group.topic_regex import regex_error, resolve

from .harness import OffsetsLog, run
from .test_consumer_group import T1, T2, Topics, coordinator

T3 = uuid.UUID(int=3)


@pytest.mark.parametrize("pattern, description", [
    ("(", "missing closing )"),
    ("[a", "missing closing ]"),
    ("[z-a]", "invalid character class range"),
    ("a(?=b)", "invalid or unsupported Perl syntax"),  # lookahead: Python's `re` has it, RE2 not
    ("a(?<!b)", "invalid or unsupported Perl syntax"),
    (r"(a)\1", "invalid escape sequence"),  # backreference
    ("a**", "invalid nested repetition operator"),
    ("a++", "invalid nested repetition operator"),  # possessive
    ("*a", "missing argument to repetition operator"),
    ("a{2,1}", "invalid repeat count"),
    ("a\\", "trailing backslash at end of expression"),
])
def test_invalid_patterns_get_re2j_descriptions(pattern: str, description: str) -> None:
    assert regex_error(pattern) == description


def test_valid_re2_patterns_include_some_python_refuses() -> None:
    for pattern in ("^orders-.*", "orders|payments", r"\pL+-\d+", r"(?i)ORDERS", "", r"\Qa.b\E"):
        assert regex_error(pattern) is None, pattern
    with pytest.raises(re.error):
        re.compile(r"\pL+")


def test_a_pattern_matches_whole_names_and_internal_topics_count() -> None:
    names = ["orders", "orders-eu", "old-orders", "__consumer_offsets", "x.y"]
    assert resolve(["orders", "orders.*", "x.y", ".*offsets", r"\pL+", "("], names) == {
        "orders": {"orders"}, "orders.*": {"orders", "orders-eu"}, "x.y": {"x.y"},
        ".*offsets": {"__consumer_offsets"}, r"\pL+": {"orders"}, "(": frozenset()}


def regex_join(c: object, member: str, regex: str, **kw: object) -> object:
    return c.consumer_group_heartbeat("g", member, 0, rebalance_timeout_ms=1000,  # type: ignore[attr-defined]
                                      subscribed_topic_regex=regex, owned=[], **kw)


def test_an_invalid_regex_is_refused_before_anything_changes() -> None:
    topics = Topics({"orders": (T1, 1)})

    async def scenario() -> None:
        c = coordinator(topics)
        refused = await regex_join(c, "a", "orders(?=-eu)")
        assert (refused.error_code, refused.error_message) == (
            E.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `orders(?=-eu)` is not a valid regular "
            "expression: invalid or unsupported Perl syntax.")
        assert c.group("g") is None
        joined = await regex_join(c, "a", "ord.*")
        assert joined.error_code == E.NONE and joined.assignment == {T1: frozenset({0})}
        # A member changing to an invalid regex keeps its subscription.
        changed = await c.consumer_group_heartbeat("g", "a", joined.member_epoch, subscribed_topic_regex="(x",
                                                   owned=[(T1, [0])])
        assert changed.error_code == E.INVALID_REGULAR_EXPRESSION
        assert c.group("g").consumer.members["a"].subscribed_topic_regex == "ord.*"
    run(scenario)


def test_resolution_keeps_describable_topics_and_refreshes_when_topics_change() -> None:
    topics = Topics({"orders-eu": (T1, 1), "orders-us": (T2, 1)})

    async def scenario() -> None:
        c = coordinator(topics)
        a = await regex_join(c, "a", "orders-.*", describable=lambda names: {n for n in names if n != "orders-us"})
        assert a.assignment == {T1: frozenset({0})}
        group = c.group("g").consumer
        assert group.resolved_regexes == {"orders-.*": {"orders-eu"}}
        # Nothing changed: no refresh, whatever the next heartbeat's member may describe.
        again = await c.consumer_group_heartbeat("g", "a", a.member_epoch, owned=[(T1, [0])])
        assert again.error_code == E.NONE and group.resolved_regexes == {"orders-.*": {"orders-eu"}}
        # A new topic: the next heartbeat refreshes every regex of the group with its member's rights.
        topics.topics["orders-ap"] = (T3, 1)
        epoch = group.group_epoch
        refreshed = await c.consumer_group_heartbeat("g", "a", a.member_epoch, owned=[(T1, [0])])
        assert group.resolved_regexes == {"orders-.*": {"orders-eu", "orders-us", "orders-ap"}}
        assert group.group_epoch == epoch + 1
        assert refreshed.assignment == {T1: frozenset({0}), T2: frozenset({0}), T3: frozenset({0})}
    run(scenario)


def test_a_second_member_shares_the_groups_resolution() -> None:
    topics = Topics({"orders-eu": (T1, 2), "orders-us": (T2, 2)})

    async def scenario() -> None:
        c = coordinator(topics)
        await regex_join(c, "a", "orders-.*", describable=lambda names: names - {"orders-us"})
        await regex_join(c, "b", "orders-.*")  # resolved already, topics unchanged: no refresh
        group = c.group("g").consumer
        assert group.resolved_regexes == {"orders-.*": {"orders-eu"}}
        assert set(group.subscription_metadata) == {"orders-eu"}
        left = await c.consumer_group_heartbeat("g", "b", -1)
        assert left.error_code == E.NONE and group.resolved_regexes == {"orders-.*": {"orders-eu"}}
    run(scenario)


def test_a_loaded_group_keeps_its_resolution_until_a_heartbeat_refreshes_it() -> None:
    topics = Topics({"orders-eu": (T1, 1), "orders-us": (T2, 1)})
    log = OffsetsLog()
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=1)

    async def scenario() -> None:
        c = log.new_coordinator(config)
        c.topics_image = topics
        a = await regex_join(c, "a", "orders-.*", describable=lambda names: names - {"orders-us"})
        c.shutdown()

        again = log.new_coordinator(config)
        again.topics_image = topics
        loaded = again.group("g").consumer
        # Read back from the subscription metadata: what the regex resolved to, not every match.
        assert loaded.resolved_regexes == {"orders-.*": {"orders-eu"}} and loaded.regexes_resolved_against is None
        refreshed = await again.consumer_group_heartbeat("g", "a", a.member_epoch, owned=[(T1, [0])])
        assert refreshed.assignment == {T1: frozenset({0}), T2: frozenset({0})}
        again.shutdown()
    run(scenario)
