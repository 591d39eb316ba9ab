"""The inter-broker response reader: size-prefixed frames received straight into one buffer per frame."""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import pytest

from broker.network.inter_broker import _ResponseReader


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


def test_a_connection_the_broker_closed_while_idle_is_opened_again(broker) -> None:  # type: ignore[no-untyped-def]
    # A replica fetcher idle while its leader restarts: the old transport is closed, and the next request must
    # open a new connection (uvloop refuses writes on a closed transport; a fetcher that kept the dead
    # connection never fetched again, seen in test_controlled_shutdown).
    from broker.network.inter_broker import BrokerConnection
    from protocol import ApiKey, request_class

    Meta = request_class(ApiKey.METADATA)

    async def scenario() -> None:
        conn = BrokerConnection("127.0.0.1", broker.port, "test", timeout_s=10)
        first = await conn.send(lambda v: Meta[v](topics=[]), ApiKey.METADATA)
        reader = conn._reader
        assert reader is not None and reader.transport is not None
        reader.transport.close()
        await asyncio.sleep(0.05)  # the loop reports the close to the protocol
        assert reader.lost
        again = await conn.send(lambda v: Meta[v](topics=[]), ApiKey.METADATA)
        assert [b.node_id for b in again.brokers] == [b.node_id for b in first.brokers]
        assert conn._reader is not reader
        conn.close()

    import uvloop

    uvloop.run(scenario())
