"""Every request handler lists its error codes (`ERRORS`) and has a test module here,
`test_<handler>_errors.py`, whose producers produce exactly those codes."""

from __future__ import annotations

import importlib

import pytest

from broker.apis import HANDLER_MODULES
from protocol.errors import ErrorCode


def _name(module: object) -> str:
    return module.__name__.rsplit(".", 1)[-1]  # type: ignore[attr-defined]


@pytest.mark.parametrize("handler", HANDLER_MODULES, ids=_name)
def test_handler_lists_its_errors_and_a_test_produces_each(handler: object) -> None:
    name = _name(handler)
    errors = getattr(handler, "ERRORS", None)
    assert errors is not None, f"broker.apis.{name} has no ERRORS"
    assert errors and all(isinstance(c, ErrorCode) and c != ErrorCode.NONE for c in errors)
    assert len(set(errors)) == len(errors), f"{name}.ERRORS lists a code twice"
    tests = importlib.import_module(f"tests.broker.apis.test_{name}_errors")
    assert set(tests.PRODUCERS) == set(errors), (
        f"test_{name}_errors.PRODUCERS must produce exactly {name}.ERRORS: "
        f"missing {sorted(c.name for c in set(errors) - set(tests.PRODUCERS))}, "
        f"extra {sorted(c.name for c in set(tests.PRODUCERS) - set(errors))}")
    assert tests.test_errors.pytestmark[0].args[1] == list(errors), "test_errors must be error_path_test(handler)"
