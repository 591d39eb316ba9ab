"""Subscription regexes of KIP-848 consumer groups (ConsumerGroupHeartbeat v1 `SubscribedTopicRegex`), in RE2
syntax as Kafka's group coordinator reads them (it compiles them with RE2/J).

Contract:
- `regex_error(pattern)`: None for a pattern RE2 accepts, else the RE2/J description of what is wrong (Kafka puts
  it in the INVALID_REGULAR_EXPRESSION message). RE2 is not Python's `re`: no lookaround, no backreferences, no
  possessive quantifiers; `a**` is an error.
- `resolve(patterns, topic_names)`: each pattern's matching topics. A topic matches when the pattern matches the
  whole name (RE2/J `matcher(name).matches()`); every topic counts, internal ones (`__consumer_offsets`) too,
  as in Kafka 4.x. A pattern that does not compile matches nothing.
- The engine is google-re2 (RE2 in C++, the grammar RE2/J ports). Its error texts are RE2's; they are mapped to
  RE2/J's wording (the Go regexp/syntax messages). Known differences with RE2/J, on patterns no topic name needs:
  RE2 accepts `\\C` (any byte) and a capture group name used twice, which RE2/J refuses.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

# google-re2 is imported by the first pattern compiled, not with the group coordinator: few groups subscribe by
# regex, and a broker's start-up imports only what it uses (issue 35).

# RE2's error codes (re2/regexp.cc) -> RE2/J's descriptions (com.google.re2j.Parser), for Kafka's message.
_RE2J_DESCRIPTIONS = {
    "unexpected error": "regexp/syntax: internal error",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    # RE2/J meets a `)` without its `(` with an empty parse stack: its internal error.
    "unexpected )": "regexp/syntax: internal error",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
}


@lru_cache(maxsize=1)
def _re2() -> tuple[Any, Any]:
    """The re2 module and the options every pattern is compiled with."""
    import re2

    options = re2.Options()
    options.log_errors = False  # an invalid pattern is the member's error, answered; not the broker's to log
    return re2, options


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> Any:
    """The compiled pattern, or RE2/J's description of its error."""
    re2, options = _re2()
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        text = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        code = text.split(": ", 1)[0]
        return _RE2J_DESCRIPTIONS.get(code, code)


def regex_error(pattern: str) -> str | None:
    compiled = _compile(pattern)
    return compiled if isinstance(compiled, str) else None


def resolve(patterns: Iterable[str], topic_names: Iterable[str]) -> dict[str, frozenset[str]]:
    compiled = {p: _compile(p) for p in patterns}
    names = list(topic_names)
    return {p: frozenset(n for n in names if c.fullmatch(n) is not None) if not isinstance(c, str) else frozenset()
            for p, c in compiled.items()}
