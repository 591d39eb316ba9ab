"""The fuzz harness in CI: a fixed seed and a short budget per corpus (issue 30).

Mutated stock-client frames for 12 s, then the controller's and KRaft frames for 8 s, each against a fresh broker
subprocess holding 1,000 acknowledged records; every invariant of `fuzz` must hold after each run. About 30 s in
all; a longer run by hand: `./dev py -m fuzz --seconds 600` (README).
"""

from __future__ import annotations

import pytest

from fuzz.harness import run

SEED = 30


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("corpus", "seconds"), [("clients", 12), ("inter-broker", 8)])
def test_hostile_frames_leave_the_broker_alive_answering_and_whole(corpus: str, seconds: float) -> None:
    report = run(corpus, seconds=seconds, seed=SEED)
    assert report.sent >= 1000, report.table()  # it did fuzz
    assert report.failures == [], report.table()
