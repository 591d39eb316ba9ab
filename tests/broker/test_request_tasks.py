"""Requests still being handled and background log work are kept and ended on shutdown, never forgotten.

A request whose handler awaits is a task the socket server keeps: a client that goes away does not cancel
it (the response is dropped, as Kafka drops it), and `SocketServer.close()` at shutdown cancels what is
still running and awaits it. Work the broker hands to its io executor is awaited before the logs close,
and a failure there is logged with what failed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Any

import pytest

from broker.network.socket_server import Response, SocketServer


async def serve(handler: Any) -> SocketServer:
    server = SocketServer(asyncio.get_running_loop(), "127.0.0.1", 0, handler, max_request_bytes=1 << 20,
                          idle_timeout_ms=-1)
    server.start()
    return server


async def send_frame(port: int) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port))
    client.sendall(struct.pack(">i", 4) + b"ping")
    return client


async def until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.005)


def test_close_cancels_and_awaits_requests_still_being_handled() -> None:
    events: list[str] = []

    async def main() -> None:
        async def slow() -> Response:
            events.append("started")
            try:
                await asyncio.Event().wait()  # never set: only shutdown ends it
            except asyncio.CancelledError:
                events.append("cancelled")
                raise
            return Response(0, [])

        server = await serve(lambda conn, frame: slow())
        client = await send_frame(server.port)
        await asyncio.wait_for(until(lambda: server.in_flight), 10)
        server.stop_accepting()
        await asyncio.wait_for(server.close(), 10)
        assert server.in_flight == set() and server.connections == {}
        client.close()

    asyncio.run(main())
    assert events == ["started", "cancelled"]


def test_a_client_that_leaves_does_not_cancel_its_request() -> None:
    events: list[str] = []

    async def main() -> None:
        release = asyncio.Event()

        async def parked() -> Response:
            await release.wait()
            events.append("finished")
            return Response(4, [b"pong"])

        server = await serve(lambda conn, frame: parked())
        client = await send_frame(server.port)
        await asyncio.wait_for(until(lambda: server.in_flight), 10)
        client.close()
        await asyncio.wait_for(until(lambda: not server.connections), 10)
        assert len(server.in_flight) == 1  # still kept: the handler runs to its end
        release.set()
        await asyncio.wait_for(until(lambda: not server.in_flight), 10)
        server.stop_accepting()
        await server.close()

    asyncio.run(main())
    assert events == ["finished"]


def test_background_log_work_is_awaited_at_shutdown_and_failures_logged(
        broker_factory: Any, caplog: pytest.LogCaptureFixture) -> None:
    import threading
    import time

    broker = broker_factory()
    done = threading.Event()

    def slow() -> None:
        time.sleep(0.3)
        done.set()

    def boom() -> None:
        raise OSError("disk on fire")

    async def submit() -> None:
        broker.server._in_io("slow work", slow)
        broker.server._in_io("burning work", boom)

    caplog.set_level(logging.ERROR)
    broker.call(submit)
    broker.stop()
    assert done.is_set()
    assert broker.server._io_pending == set()
    [line] = [r for r in caplog.records if r.name == "broker.server" and r.levelno >= logging.ERROR]
    assert line.getMessage() == "burning work failed" and "disk on fire" in str(line.exc_info[1])
