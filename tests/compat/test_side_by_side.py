"""The same matrix against Apache Kafka (a pytest-docker container) and our broker, side by side.

Skips with "no Docker engine" where none answers. Against Apache Kafka every scenario must pass
except client gaps (GAPS.md kind ``client``): that keeps the scenarios themselves honest.
"""

from __future__ import annotations

from pathlib import Path

from compat import report
from compat.clients import ADAPTERS
from compat.gaps import find_gap, load_gaps
from compat.model import Verdict
from compat.runner import run_matrix
from compat.targets import EmbeddedTarget, ExternalTarget


def test_side_by_side_with_apache_kafka(apache_kafka: ExternalTarget, compat_target: EmbeddedTarget,
                                        tmp_path: Path) -> None:
    clients = [c for c in ADAPTERS.values() if c.unavailable_reason() is None]
    theirs = run_matrix(apache_kafka, clients, timeout_s=10.0, limit_s=60.0)
    ours = run_matrix(compat_target, clients, timeout_s=10.0, limit_s=60.0)
    (tmp_path / "side-by-side.md").write_text(report.to_markdown(theirs + ours))
    gaps = load_gaps()
    wrong = []
    for r in theirs:
        gap = find_gap(gaps, r.scenario, r.client)
        expected = Verdict.SKIP if gap is not None and gap.kind == "client" else Verdict.PASS
        if r.verdict is not expected and not r.environmental:
            wrong.append(f"{r.client} {r.scenario}: {r.verdict.value} {r.detail}")
    assert not wrong, "against Apache Kafka:\n" + "\n".join(wrong)
