"""The inter-broker response reader: size-prefixed frames received straight into one buffer per frame."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import pytest

from broker.inter_broker import _ResponseReader


def _feed(reader: _ResponseReader, data: bytes, rng: random.Random) -> None:
    """As the event loop does: ask for a buffer, receive at most its size, report how much came."""
    pos = 0
    while pos < len(data):
        buf = reader.get_buffer(-1)
        n = min(len(buf), len(data) - pos, rng.randint(1, 5000))
        buf[:n] = data[pos:pos + n]
        reader.buffer_updated(n)
        pos += n


def _reader() -> tuple[_ResponseReader, list[str]]:
    events: list[str] = []
    reader = _ResponseReader()
    reader.connection_made(SimpleNamespace(abort=lambda: events.append("abort")))  # type: ignore[arg-type]
    return reader, events


def _frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def test_frames_in_any_chunking_come_out_whole_and_in_order() -> None:
    async def scenario() -> None:
        rng = random.Random(7)
        reader, _ = _reader()
        bodies = [bytes(rng.randrange(256) for _ in range(n)) for n in (0, 1, 3, 4, 5, 70_000, 12)]
        waiter = asyncio.ensure_future(reader.read_frame())
        await asyncio.sleep(0)
        _feed(reader, b"".join(_frame(b) for b in bodies), rng)
        got = [bytes(await waiter)] + [bytes(await reader.read_frame()) for _ in bodies[1:]]
        assert got == bodies

    asyncio.run(scenario())


def test_a_size_out_of_bounds_fails_the_waiter_and_aborts() -> None:
    async def scenario() -> None:
        reader, events = _reader()
        waiter = asyncio.ensure_future(reader.read_frame())
        await asyncio.sleep(0)
        _feed(reader, (-1).to_bytes(4, "big", signed=True), random.Random(1))
        with pytest.raises(ConnectionError, match="out of bounds"):
            await waiter
        assert events == ["abort"]
        with pytest.raises(ConnectionError):
            await reader.read_frame()  # and every later read

    asyncio.run(scenario())


def test_a_connection_lost_mid_frame_fails_the_waiter() -> None:
    async def scenario() -> None:
        reader, _ = _reader()
        waiter = asyncio.ensure_future(reader.read_frame())
        await asyncio.sleep(0)
        _feed(reader, _frame(b"abcdef")[:7], random.Random(1))
        reader.connection_lost(None)
        with pytest.raises(ConnectionError, match="closed by the broker"):
            await waiter

    asyncio.run(scenario())
