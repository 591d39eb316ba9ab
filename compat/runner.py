"""Runs the matrix: every (client, scenario) pair against one target, each with a bounded time.

Each pair runs in its own daemon thread with fresh adapters, so a client that hangs costs one
FAIL ("timed out after N s") rather than the whole run; a timed-out thread is abandoned (its
client's own timeouts end it later). Pairs run one after another: the clients' I/O threads and
the broker share a 2-core machine, and sequential runs keep timings honest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from compat.clients import ADAPTERS
from compat.clients.base import ClientAdapter
from compat.context import Context, Target
from compat.model import NeedsEnvironment, Result, Skip, Verdict, first_line
from compat.scenarios import SCENARIOS


def run_one(target: Target, client_cls: type[ClientAdapter], scenario_id: str, *,
            setup_cls: type[ClientAdapter], timeout_s: float = 15.0, limit_s: float = 90.0) -> Result:
    """Run one scenario with one client; never raises."""
    reason = client_cls.unavailable_reason()
    security = getattr(target, "security", None)
    if reason is None and security is not None and not client_cls.supports_security:
        reason = f"the {client_cls.name} adapter is not wired for secured targets yet"
    if reason is not None:
        return Result(target.name, client_cls.name, scenario_id, Verdict.SKIP, reason, environmental=True)
    try:
        client_cls.prepare()
    except Exception as e:  # noqa: BLE001 - a client that cannot be set up fails every scenario with the reason
        return Result(target.name, client_cls.name, scenario_id, Verdict.FAIL,
                      f"{client_cls.name} could not be set up: {first_line(e)}")
    fn = SCENARIOS[scenario_id].fn
    box: list[Result] = []
    start = time.monotonic()

    def body() -> None:
        client = setup = None
        ctx = None
        environmental = False
        try:
            client = client_cls(target.bootstrap, timeout_s, security)
            setup = setup_cls(target.bootstrap, timeout_s, security)
            ctx = Context(target, client, setup, timeout_s)
            fn(ctx)
            verdict, detail = Verdict.PASS, ""
        except NeedsEnvironment as e:
            verdict, detail, environmental = Verdict.SKIP, str(e) or type(e).__name__, True
        except Skip as e:
            verdict, detail = Verdict.SKIP, str(e) or type(e).__name__
        except BaseException as e:  # noqa: BLE001 - any error is this scenario's failure verdict
            verdict, detail = Verdict.FAIL, first_line(e)
        finally:
            if ctx is not None:
                ctx.run_cleanup()
            for adapter in (client, setup):
                if adapter is not None:
                    try:
                        adapter.close()
                    except Exception:  # noqa: BLE001 - closing is best effort
                        pass
        box.append(Result(target.name, client_cls.name, scenario_id, verdict, detail, time.monotonic() - start,
                          environmental))

    thread = threading.Thread(target=body, name=f"compat-{client_cls.name}-{scenario_id}", daemon=True)
    thread.start()
    thread.join(limit_s)
    if not box:
        return Result(target.name, client_cls.name, scenario_id, Verdict.FAIL,
                      f"timed out after {limit_s:.0f}s", time.monotonic() - start)
    return box[0]


# kafka-python first: pure Python, pinned by pyproject, and its requests are easy to trace.
SETUP_PREFERENCE = ["kafka-python", "confluent-kafka"]


def default_setup_adapter() -> type[ClientAdapter]:
    """The first available client of SETUP_PREFERENCE."""
    for name in SETUP_PREFERENCE:
        cls = ADAPTERS.get(name)
        if cls is not None and cls.unavailable_reason() is None:
            return cls
    raise RuntimeError("no setup client available: install confluent-kafka or kafka-python")


def run_matrix(target: Target, clients: Sequence[type[ClientAdapter]], scenario_ids: Sequence[str] | None = None,
               *, timeout_s: float = 15.0, limit_s: float = 90.0,
               on_result: Callable[[Result], None] | None = None) -> list[Result]:
    setup_cls = default_setup_adapter()
    results: list[Result] = []
    for client_cls in clients:
        for sid in [s for s in scenario_ids or list(SCENARIOS) if client_cls.runs(s)]:
            r = run_one(target, client_cls, sid, setup_cls=setup_cls, timeout_s=timeout_s, limit_s=limit_s)
            results.append(r)
            if on_result is not None:
                on_result(r)
    return results
