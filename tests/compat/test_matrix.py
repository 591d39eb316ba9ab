"""The compat matrix as tests: every (client, scenario) against our broker, each verdict checked
against compat/GAPS.md (a listed gap must still be a gap; anything else must pass)."""

from __future__ import annotations

import pytest

from compat.clients import ADAPTERS
from compat.clients.java import JavaAdapter, compile_client
from compat.gaps import find_gap, load_gaps
from compat.model import Result, Verdict
from compat.runner import run_one
from compat.scenarios import SCENARIOS
from compat.targets import ClusterTarget, EmbeddedTarget

GAPS = load_gaps()
PAIRS = [(c, s) for c, cls in ADAPTERS.items() for s in SCENARIOS if cls.runs(s)]


def run(target: EmbeddedTarget | ClusterTarget, client: str, scenario: str) -> Result:
    from compat.runner import default_setup_adapter
    # The limit catches a hung scenario, it times nothing: Spark's first job in a session (the JVM's classes, the
    # connector's first producer and consumer) took over 60 s once on this 2-core machine under a full run.
    return run_one(target, ADAPTERS[client], scenario, setup_cls=default_setup_adapter(), timeout_s=10.0,
                   limit_s=150.0 if client == "spark" else 60.0)


def judge(result: Result) -> None:
    if result.environmental:
        pytest.skip(result.detail)
    gap = find_gap(GAPS, result.scenario, result.client)
    if gap is not None:
        if result.verdict is Verdict.PASS:
            pytest.fail(f"listed in compat/GAPS.md ({gap.kind}: {gap.reason}) but passes: remove the row")
        assert result.verdict is gap.expected, (
            f"GAPS.md expects {gap.expected.value} ({gap.reason}); got {result.verdict.value}: {result.detail}")
        if result.verdict is Verdict.SKIP:
            pytest.skip(f"known client gap: {result.detail}")
        pytest.xfail(f"known broker gap: {gap.reason[:200]}")
    assert result.verdict is Verdict.PASS, f"{result.verdict.value}: {result.detail} (not listed in GAPS.md)"


@pytest.mark.parametrize(("client", "scenario"), PAIRS, ids=[f"{c}-{s}" for c, s in PAIRS])
def test_scenario(compat_target: EmbeddedTarget, client: str, scenario: str) -> None:
    judge(run(compat_target, client, scenario))


@pytest.mark.parametrize("client", [c for c, cls in ADAPTERS.items() if cls.runs("auto_create_topics")])
def test_auto_create_disabled(no_auto_create_target: EmbeddedTarget, client: str) -> None:
    """Same scenario, broker with auto.create.topics.enable=false: the produce must fail, no topic."""
    judge(run(no_auto_create_target, client, "auto_create_topics"))


@pytest.mark.parametrize("client", [c for c, cls in ADAPTERS.items() if cls.runs("not_leader")])
def test_not_leader_in_cluster(cluster_target: ClusterTarget, client: str) -> None:
    """A long-lived producer keeps working when its partition's leader is stopped and restarted."""
    cluster_target.assert_alive()
    judge(run(cluster_target, client, "not_leader"))
    cluster_target.assert_alive()


@pytest.mark.parametrize("client", [c for c, cls in ADAPTERS.items() if cls.runs("admin_reassignment")])
def test_reassignment_in_cluster(cluster_target: ClusterTarget, client: str) -> None:
    """A partition moves to another broker through the admin API (on one broker it can only stay)."""
    cluster_target.assert_alive()
    judge(run(cluster_target, client, "admin_reassignment"))


@pytest.mark.parametrize("client", [c for c, cls in ADAPTERS.items() if issubclass(cls, JavaAdapter)])
def test_the_java_clients_run_from_real_jars(client: str) -> None:
    """Every kafka-clients release of the matrix runs here (its scenarios would otherwise report a skip): jars from
    Maven Central (realkafka.jars), CompatClient.java compiled against them."""
    cls = ADAPTERS[client]
    assert cls.unavailable_reason() is None, cls.unavailable_reason()
    assert compile_client(cls.classpath()).joinpath("CompatClient.class").exists()


def test_gaps_name_real_scenarios_and_clients() -> None:
    for gap in GAPS:
        assert gap.scenario in SCENARIOS, f"GAPS.md names unknown scenario {gap.scenario}"
        assert gap.client == "*" or gap.client in ADAPTERS, f"GAPS.md names unknown client {gap.client}"
