"""A broker task cancelled at shutdown must end.

On Python 3.11 `asyncio.wait_for` returns the inner result when a cancellation arrives just as the inner
awaitable completes, so the cancellation is lost: a replica fetcher cancelled while its Fetch response was
arriving ran on forever and the broker never finished a SIGTERM. The broker's code uses `asyncio.timeout`.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from broker.network.inter_broker import BrokerConnection, _ResponseReader
from protocol import ApiKey, request_class

ROOT = Path(__file__).resolve().parents[2]


def test_no_wait_for_in_the_broker() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "broker").rglob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if re.search(r"\basyncio\.wait_for\(", line)]
    assert offenders == []


def test_a_request_cancelled_as_its_response_arrives_is_cancelled() -> None:
    """The response's first bytes land and the sender is cancelled in the same loop iteration (a fetcher
    stopped at shutdown): the cancellation must win. With wait_for the read's result won instead."""

    async def scenario() -> None:
        conn = BrokerConnection("127.0.0.1", 9, "test", timeout_s=5)
        reader = _ResponseReader()
        reader.connection_made(SimpleNamespace(write=lambda data: None, close=lambda: None,  # type: ignore[arg-type]
                                               abort=lambda: None))
        conn._reader = reader
        task = asyncio.create_task(conn._roundtrip(request_class(ApiKey.METADATA)[1](topics=[]), 1))
        for _ in range(3):
            await asyncio.sleep(0)  # the request is written; the task waits for the response
        for chunk in ((4).to_bytes(4, "big"), (1).to_bytes(4, "big")):
            buf = reader.get_buffer(-1)
            buf[:len(chunk)] = chunk
            reader.buffer_updated(len(chunk))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert conn._reader is None  # closed: the next request must not read this one's answer

    asyncio.run(scenario())
