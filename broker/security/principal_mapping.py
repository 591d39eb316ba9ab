"""`ssl.principal.mapping.rules`: from a client certificate's distinguished name to a principal name, as
Kafka's SslPrincipalMapper.

Contract:
- The rules are a list separated by commas (and blanks, newlines), each `DEFAULT` (the DN itself) or
  `RULE:<pattern>/<replacement>/[L|U]`; `\\` escapes a `/` (or anything) inside pattern and replacement;
  empty entries are ignored. The first rule whose pattern matches the whole DN gives the name: every match
  of the pattern replaced by the replacement (`$1`.. are groups, `\\x` a literal x, as Java's replaceAll),
  lower- or upper-cased by L / U. No rule applies: `NoMatchingRule` (the connection's authentication fails).
- Patterns are Java regular expressions; the usual ones (groups, classes, lazy quantifiers, anchors) mean the
  same in Python's `re`, which compiles them. A rule that does not parse, or a pattern `re` cannot compile,
  is a start-up error naming the rule (Kafka also refuses such rules when the listener is built).
- A `$n` naming a group the pattern does not have is a literal `$n` (Kafka escapes it before replaceAll,
  using the longest leading digits that name a group, e.g. `$12` with one group is group 1 then `2`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)


class InvalidRule(ValueError):
    """A rule of ssl.principal.mapping.rules that does not parse."""


class NoMatchingRule(Exception):
    """No rule applies to the DN."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: tuple[str | int, ...] = ()  # literal text and group numbers
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        parts = self.replacement
        name = self.pattern.sub(lambda m: "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts), dn)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


def _replacement(text: str, groups: int) -> tuple[str | int, ...]:
    """Java's appendReplacement syntax after Kafka's escaping of group numbers the pattern does not have."""
    out: list[str | int] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif ch == "$" and i + 1 < len(text) and text[i + 1].isdigit():
            ref = int(text[i + 1])
            if ref > groups:
                out.append(ch)  # not a group: the `$` and its digits stay literal text
                i += 1
                continue
            i += 2
            while i < len(text) and text[i].isdigit() and ref * 10 + int(text[i]) <= groups:
                ref = ref * 10 + int(text[i])
                i += 1
            out.append(ref)
        elif ch == "$":
            raise InvalidRule(f"illegal group reference in replacement `{text}`")
        else:
            out.append(ch)
            i += 1
    return tuple(out)


def _parse(rule: str) -> _Rule | None:
    m = _PARSER.match(rule)
    if m is None or m.end() != len(rule):
        unmatched = rule[m.end():] if m is not None else rule
        raise InvalidRule(f"Invalid rule: `{rule}`, unmatched substring: `{unmatched}`")
    if m.group(1) is not None:
        return _Rule(None)
    if m.group(2) is None:
        if m.group(5):
            raise InvalidRule(f"Invalid rule: `{rule}`")
        return None  # an empty entry
    try:
        pattern = re.compile(m.group(2))
    except re.error as e:
        raise InvalidRule(f"Invalid rule: `{rule}`: {e}") from None
    return _Rule(pattern, _replacement(m.group(3), pattern.groups), m.group(4))


class SslPrincipalMapper:
    def __init__(self, rules: str | None) -> None:
        text = (rules if rules is not None else "DEFAULT").strip()
        parsed = [_parse(m.group(1)) for m in _SPLITTER.finditer(text)]
        self.rules = [r for r in parsed if r is not None]

    @property
    def is_default(self) -> bool:
        return len(self.rules) == 1 and self.rules[0].pattern is None

    def name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}")
