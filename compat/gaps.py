"""compat/GAPS.md as data: which (scenario, client) pairs are knowingly not passing, and why.

GAPS.md holds one Markdown table whose rows are ``| scenario | client | kind | reason |``:
- client is a client name or ``*`` (every client);
- kind ``client``: the client library cannot express the scenario (expected verdict: skip);
- kind ``broker``: our broker does not support it yet or has a known bug (expected verdict: fail).
The pytest matrix checks every verdict against this table both ways, so the file stays true: an
unlisted failure fails the test, and a listed gap that starts passing fails it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compat.model import Verdict

GAPS_PATH = Path(__file__).with_name("GAPS.md")


@dataclass(frozen=True)
class Gap:
    scenario: str
    client: str
    kind: str
    reason: str

    @property
    def expected(self) -> Verdict:
        return Verdict.SKIP if self.kind == "client" else Verdict.FAIL


class GapsFormatError(ValueError):
    pass


def parse_gaps(text: str) -> list[Gap]:
    gaps: list[Gap] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if len(cells) < 4 or cells[0] in ("scenario", "") or set(cells[0]) <= {"-", ":"}:
            continue
        scenario, client, kind = (c.strip("`") for c in cells[:3])
        if kind not in ("client", "broker"):
            raise GapsFormatError(f"GAPS.md line {lineno}: kind must be client or broker, got {kind!r}")
        gaps.append(Gap(scenario, client, kind, " | ".join(cells[3:])))
    return gaps


def load_gaps(path: Path = GAPS_PATH) -> list[Gap]:
    return parse_gaps(path.read_text())


def find_gap(gaps: list[Gap], scenario: str, client: str) -> Gap | None:
    for g in gaps:
        if g.scenario == scenario and g.client in (client, "*"):
            return g
    return None
