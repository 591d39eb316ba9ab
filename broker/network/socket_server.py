"""The socket layer: size-prefixed frames in, responses out in request order, fetched data by sendfile.

Why raw non-blocking sockets instead of asyncio transports: uvloop's transports implement neither
`loop.sendfile` nor writability callbacks on their sockets (measured: `NotImplementedError`, and
`add_writer` refuses a transport's fd), so zero-copy fetch needs the socket to ourselves. Each connection
registers its fd with `loop.add_reader`/`add_writer` and does its own buffering (about what a transport
does), which also lets a response be written as a gather of buffers (`socket.sendmsg`) plus `os.sendfile`
of segment slices without ever joining them in memory.

Contract:
- A frame is read whole before it is handled; its size prefix is checked against the connection's
  `max_frame_bytes` (`socket.request.max.bytes`; `sasl.server.max.receive.size` on a SASL connection until it
  is authenticated) before anything is allocated for it. A bad size closes that connection
  with one log line. A large frame's buffer grows as its bytes arrive, so what a connection holds is bounded by
  what it has sent (at most twice that), never by what its size prefix promises.
- Requests on one connection are handled one at a time, in arrival order (Kafka mutes a channel while a
  request is in flight), so responses leave in request order; other connections are unaffected. One
  exception, where we do better than Kafka: a handler whose work is done and whose answer only waits (a produce
  waiting for its writes or for the followers) returns a `Deferred`; the connection then goes on with the next
  request (at most `_MAX_DEFERRED` answers waiting) and still answers in request order. A producer's
  in-flight requests are then appended back to back instead of one replication round trip apart.
- The handler returns `None` (no response, e.g. acks=0), a `Response` (size + parts), an awaitable
  of one, or a `Deferred` awaitable of one. Parts are bytes-like objects or `SendfileChunk`s.
- Reading pauses while a connection has queued frames or a large unsent output (back-pressure).
- With `queued.max.request.bytes` (> 0, Kafka's request memory pool; default -1: none), the frames a listener's
  connections hold (received in part or whole, queued, being handled) take their declared size from one pool;
  while it is used up, a connection about to take on a frame is muted, and it reads on once the frames of others
  are handled (as Kafka mutes its channels under memory pressure).
- Idle connections are closed after `connections.max.idle.ms`.
- A listener that runs out of file descriptors (EMFILE) stops accepting for 0.1 s instead of spinning on its
  readable socket, so the connections already open go on being served.
- Every request still being handled is a task the server keeps (`SocketServer.in_flight`). A client that
  goes away does not cancel its request (its response is dropped, as Kafka drops it); `close()` at
  shutdown closes every connection, then cancels what is still running and awaits it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger("broker.network")

# One recv_into the server's scratch buffer reads at most this much; a frame larger than this is received
# straight into its own body buffer.
_RECV_SIZE = 64 * 1024
# What a frame larger than _RECV_SIZE starts with; its buffer doubles as its bytes arrive (glibc grows large
# blocks with mremap: no copy).
_FIRST_BODY_BYTES = 256 * 1024
_MAX_QUEUED_FRAMES = 16
_OUTPUT_HIGH_WATER = 8 * 1024 * 1024
_SENDMSG_MAX_PARTS = 512
_MSG_MORE = getattr(socket, "MSG_MORE", 0)  # Linux; elsewhere the header goes out on its own, as before
# Deferred answers one connection may have waiting before it stops taking requests (clients keep at most 5
# requests in flight by default).
_MAX_DEFERRED = 8
# How long a listener stops accepting after running out of file descriptors (EMFILE).
_ACCEPT_BACKOFF_S = 0.1


@dataclass(slots=True)
class SendfileChunk:
    """A byte range of an open file to send with os.sendfile (never read into memory)."""

    fileno: int
    offset: int
    length: int


Part = bytes | bytearray | memoryview | SendfileChunk


@dataclass(slots=True)
class Deferred:
    """A handler's answer that only waits: what the request does is done (see the contract)."""

    awaitable: Awaitable[Any]


@dataclass(slots=True)
class Response:
    size: int  # the frame size (without the 4-byte prefix)
    parts: list[Part]
    # Called with (perf_counter ns when the connection took the answer, ns when its last byte was written), for
    # the request metrics (broker/metrics); None: nobody asks.
    on_sent: Callable[[int, int], None] | None = None


class FrameHandler(Protocol):
    def __call__(self, conn: Connection, frame: bytearray) -> Response | Awaitable[Response | None] | None: ...


class Connection:
    __slots__ = (
        "server", "sock", "fd", "loop", "peer", "id", "_rbuf", "_body", "_body_pos", "_body_size", "_frames", "_busy",
        "_out", "_out_bytes", "_writing", "_reading", "closed", "last_active", "requests", "principal", "auth",
        "max_frame_bytes", "_throttled", "_throttled_until", "_answers", "_reserved", "_handling", "_memory_wait",
        "_arrived", "frame_arrived_ns", "_written", "_send_hooks", "client_software",
    )

    def __init__(self, server: SocketServer, sock: socket.socket, peer: tuple[str, int], conn_id: int) -> None:
        self.server = server
        self.sock = sock
        self.fd = sock.fileno()
        self.loop = server.loop
        self.peer = peer
        self.id = conn_id
        self._rbuf = bytearray()
        self._body: bytearray | None = None
        self._body_pos = 0
        self._body_size = 0
        self._frames: deque[bytearray] = deque()
        self._busy = False
        self._answers: deque[Any] = deque()  # in request order: Responses and tasks of Deferred answers
        self._out: deque[Any] = deque()
        self._out_bytes = 0
        self._writing = False
        self._reading = False
        self.closed = False
        self.last_active = time.monotonic()
        self.requests = 0
        # Who the client is: User:ANONYMOUS until TLS (client certificate) or SASL says otherwise.
        self.principal = "User:ANONYMOUS"
        self.auth: Any = None  # a SASL listener's authenticator, until the client is authenticated
        self.client_software: tuple[str, str] | None = None  # ApiVersions v3+: (name, version)
        self.max_frame_bytes = server.max_request_bytes
        self._throttled = False
        self._throttled_until = 0.0
        # queued.max.request.bytes (SocketServer.reserve): bytes this connection holds from the server's pool, the
        # size of the frame being handled, and whether it waits for the pool to have room before it reads on
        self._reserved = 0
        self._handling = 0
        self._memory_wait = False
        # With request metrics (SocketServer.track_arrival): when each queued frame was received whole, the one being
        # handled's in frame_arrived_ns; bytes written so far, and (byte mark, callback, ns) of answers being sent.
        self._arrived: deque[int] | None = deque() if server.track_arrival else None
        self.frame_arrived_ns = 0
        self._written = 0
        self._send_hooks: deque[tuple[int, Callable[[int, int], None], int]] = deque()
        self._resume_reading()

    def __repr__(self) -> str:
        return f"connection {self.peer[0]}:{self.peer[1]}#{self.id}"

    # ---- reading
    def _resume_reading(self) -> None:
        if not self._reading and not self.closed and not self._throttled and not self._memory_wait:
            self.loop.add_reader(self.fd, self._on_readable)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def _on_readable(self) -> None:
        try:
            if self._body is not None:
                body = self._body
                if self._body_pos == len(body):  # received all it holds so far: grow it toward the declared size
                    body.extend(bytes(min(len(body), self._body_size - len(body))))
                n = self.sock.recv_into(memoryview(body)[self._body_pos:])
                if n == 0:
                    self.close("client closed the connection mid-request")
                    return
                self._body_pos += n
                if self._body_pos == self._body_size:
                    self._frames.append(body)
                    if self._arrived is not None:
                        self._arrived.append(time.perf_counter_ns())
                    self._body = None
            else:
                scratch = self.server.recv_scratch
                n = self.sock.recv_into(scratch)
                if n == 0:
                    self.close(None)
                    return
                if not self._split_frames(scratch[:n]):
                    return
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return
        except ConnectionResetError:
            self.close(None)  # the client went away: routine, not worth a log line
            return
        except OSError as e:
            self.close(f"read failed: {e.strerror or e}")
            return
        self.last_active = time.monotonic()
        if len(self._frames) >= _MAX_QUEUED_FRAMES:
            self._pause_reading()
        self._process()

    def _split_frames(self, data: memoryview) -> bool:
        """Cut the frames out of `data` (just received, in the server's scratch buffer) after what is buffered.

        Each frame is copied once into its own bytearray. A frame larger than the scratch buffer gets its body
        buffer now and the rest of it is received straight into that (`_body`), so big produce requests are not
        copied through intermediate buffers.
        """
        if self._rbuf:
            self._rbuf += data
            data = memoryview(self._rbuf)
        limit = self.max_frame_bytes
        pooled = self.server.queued_max_bytes > 0
        pos = 0
        end = len(data)
        try:
            while end - pos >= 4:
                size = int.from_bytes(data[pos:pos + 4], "big", signed=True)
                if size <= 0 or size > limit:
                    key = "socket.request.max.bytes" if limit == self.server.max_request_bytes \
                        else "sasl.server.max.receive.size"
                    self.close(f"request size {size} is outside 1..{limit} ({key})")
                    return False
                if pooled and (end - pos - 4 >= size or size > _RECV_SIZE):  # a frame is taken on: from the pool
                    if not self.server.reserve(size):
                        self._memory_wait = True  # muted until the pool has room again, as Kafka's channels are
                        self._pause_reading()
                        self.server.memory_waiters.append(self)
                        break
                    self._reserved += size
                if end - pos - 4 >= size:
                    self._frames.append(bytearray(data[pos + 4:pos + 4 + size]))
                    if self._arrived is not None:
                        self._arrived.append(time.perf_counter_ns())
                    pos += 4 + size
                    continue
                if size > _RECV_SIZE:
                    # The buffer grows (doubling) as the bytes arrive: a size prefix alone reserves no more than
                    # _FIRST_BODY_BYTES, so a peer that promises 100 MB and sends nothing holds a quarter MB.
                    have = end - pos - 4
                    body = bytearray(min(size, max(_FIRST_BODY_BYTES, 2 * have)))
                    body[:have] = data[pos + 4:end]
                    self._body = body
                    self._body_size = size
                    self._body_pos = have
                    pos = end
                break
            rest = bytearray(data[pos:end])
        finally:
            data.release()
        self._rbuf = rest
        return True

    # ---- request processing (one at a time per connection)
    def throttle(self, delay_s: float) -> None:
        """Mute the connection for `delay_s` (a quota was exceeded, KIP-219): no reading and no processing of
        queued requests; responses already made still go out."""
        until = time.monotonic() + delay_s
        if self._throttled and until <= self._throttled_until:
            return  # an earlier, longer throttle is still running
        self._throttled, self._throttled_until = True, until
        self._pause_reading()
        self.loop.call_later(delay_s, self._unthrottle)

    def _unthrottle(self) -> None:
        if time.monotonic() < self._throttled_until - 0.001:
            return  # a later throttle extended this one: its own timer ends it
        self._throttled = False
        if not self.closed:
            self._process()

    def _process(self) -> None:
        while (self._frames and not self._busy and not self.closed and not self._throttled
               and len(self._answers) < _MAX_DEFERRED):
            frame = self._frames.popleft()
            if self._arrived is not None:
                self.frame_arrived_ns = self._arrived.popleft()
            self.requests += 1
            self._handling = len(frame)
            try:
                result = self.server.handler(self, frame)
            except Exception as e:  # the server answers its handlers' failures; this is the last resort
                log.error("%s: unexpected error handling a request: %r; closing the connection", self, e)
                log.debug("%s: the request's failure", self, exc_info=e)
                self.close(None)
                return
            if result is None:
                self._handled()
                continue
            if isinstance(result, Response):
                self._handled()
                self._answer(result)
                continue
            if isinstance(result, Deferred):
                self._handled()  # what the request does is done: only its answer waits
                task = self._track(result.awaitable)
                self._answers.append(task)
                task.add_done_callback(self._on_deferred)
                continue
            self._busy = True
            self._track(result).add_done_callback(self._on_result)
            return
        if not self._frames and not self.closed and self._out_bytes < _OUTPUT_HIGH_WATER:
            self._resume_reading()

    def _track(self, awaitable: Awaitable[Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(awaitable)
        self.server.in_flight.add(task)
        task.add_done_callback(self.server.in_flight.discard)
        return task

    def _answer(self, response: Response) -> None:
        if self._answers:
            self._answers.append(response)  # behind a deferred answer of an earlier request
        else:
            self.send(response)

    def _outcome(self, fut: asyncio.Future[Response | None]) -> Response | None | bool:
        """The task's response (or None); False when it failed and the connection was closed."""
        if fut.cancelled():
            self.close("request cancelled")
            return False
        exc = fut.exception()
        if exc is not None:
            log.error("%s: unexpected error handling a request: %r; closing the connection", self, exc)
            log.debug("%s: the request's failure", self, exc_info=exc)
            self.close(None)
            return False
        return fut.result()

    def _handled(self) -> None:
        """The request being handled is done with its frame: its bytes go back to the pool (Kafka releases a
        request's buffer once its handler returns)."""
        if self._reserved and self._handling:
            self._reserved -= self._handling
            self.server.release(self._handling)
        self._handling = 0

    def memory_available(self) -> None:
        """The pool has room again: take on what was received meanwhile, then read on."""
        self._memory_wait = False
        if self.closed:
            return
        if self._rbuf and self._body is None and not self._split_frames(memoryview(b"")):
            return
        if self._memory_wait:
            return
        if len(self._frames) < _MAX_QUEUED_FRAMES:
            self._resume_reading()
        self._process()

    def _on_result(self, fut: asyncio.Future[Response | None]) -> None:
        self._busy = False
        self._handled()
        if self.closed:
            return
        response = self._outcome(fut)
        if response is False:
            return
        if response is not None:
            self._answer(response)  # type: ignore[arg-type]
        self._process()

    def _on_deferred(self, _: asyncio.Future[Response | None]) -> None:
        while self._answers and not self.closed:
            head = self._answers[0]
            if not isinstance(head, Response):
                if not head.done():
                    return
                head = self._outcome(head)
                if head is False:
                    return
            self._answers.popleft()
            if head is not None:
                self.send(head)
        if not self.closed:
            self._process()

    @property
    def busy(self) -> bool:
        return self._busy or bool(self._frames) or bool(self._answers)

    # ---- writing
    def send(self, response: Response) -> None:
        if self.closed:
            return
        self._out.append(response.size.to_bytes(4, "big"))
        self._out.extend(response.parts)
        self._out_bytes += 4 + response.size
        if response.on_sent is not None:
            self._send_hooks.append((self._written + self._out_bytes, response.on_sent, time.perf_counter_ns()))
        if not self._writing:
            self._flush()
        if self._out_bytes >= _OUTPUT_HIGH_WATER:
            self._pause_reading()

    def _flush(self) -> None:
        out = self._out
        sock = self.sock
        try:
            while out:
                head = out[0]
                if isinstance(head, SendfileChunk):
                    n = os.sendfile(self.fd, head.fileno, head.offset, head.length)
                    if n == 0:
                        # The file is shorter than the slice promised (truncated under us): the frame
                        # cannot be completed, so the connection must go.
                        self.close(f"segment file shrank while sending fetch data (fd {head.fileno})")
                        return
                    self._out_bytes -= n
                    self._written += n
                    if n < head.length:
                        head.offset += n
                        head.length -= n
                        break
                    out.popleft()
                    continue
                bufs = []
                for item in out:
                    if isinstance(item, SendfileChunk) or len(bufs) >= _SENDMSG_MAX_PARTS:
                        break
                    bufs.append(item)
                # A fetch answer's header followed by its file slice: MSG_MORE holds the header back until
                # sendfile brings the records, so they leave in the same segments instead of a tiny packet first
                # (one wake-up of the reader per answer, not two).
                flags = _MSG_MORE if len(bufs) < len(out) and isinstance(out[len(bufs)], SendfileChunk) else 0
                n = sock.sendmsg(bufs, (), flags) if len(bufs) > 1 else sock.send(bufs[0], flags)
                self._out_bytes -= n
                self._written += n
                while n:
                    item = out[0]
                    ln = len(item)
                    if n >= ln:
                        out.popleft()
                        n -= ln
                    else:
                        out[0] = memoryview(item)[n:]
                        n = 0
                if out and not isinstance(out[0], SendfileChunk) and len(bufs) < _SENDMSG_MAX_PARTS:
                    break  # the kernel took less than offered: socket buffer full
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                pass
            else:
                self.close(f"write failed: {e.strerror or e}")
                return
        self._after_flush()

    def _after_flush(self) -> None:
        """Wait for writability while output is left; once it is all written, read again if reading paused."""
        while self._send_hooks and self._send_hooks[0][0] <= self._written:
            _, on_sent, handed = self._send_hooks.popleft()
            on_sent(handed, time.perf_counter_ns())
        if self._out:
            if not self._writing:
                self.loop.add_writer(self.fd, self._on_writable)
                self._writing = True
        else:
            if self._writing:
                self.loop.remove_writer(self.fd)
                self._writing = False
            self.last_active = time.monotonic()
            if not self._reading and len(self._frames) < _MAX_QUEUED_FRAMES and not self.closed:
                self._resume_reading()

    def _on_writable(self) -> None:
        self._flush()
        if not self._out and not self._busy:
            self._process()

    def close_when_sent(self, give_up_s: float = 5.0) -> None:
        """Stop reading, then close once what is queued has been written (an answer before the close, as
        Kafka sends a failed authentication's response); bounded by `give_up_s`."""
        self._pause_reading()
        self._frames.clear()
        if self._arrived is not None:
            self._arrived.clear()
        deadline = time.monotonic() + give_up_s

        def check() -> None:
            if self.closed:
                return
            if not self._out or time.monotonic() > deadline:
                self.close(None)
            else:
                self.loop.call_later(0.01, check)

        check()

    def close(self, reason: str | None) -> None:
        if self.closed:
            return
        self.closed = True
        if reason:
            log.warning("%s: closing: %s", self, reason)
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        self._out.clear()
        self._frames.clear()
        if self._arrived is not None:
            self._arrived.clear()
        self._send_hooks.clear()
        self._body = None
        if self._reserved:
            reserved, self._reserved = self._reserved, 0
            self.server.release(reserved)
        try:
            self.sock.close()
        except OSError:
            pass
        self.server._forget(self)


class SocketServer:
    """Accepts connections on one listening socket and feeds their frames to `handler`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, host: str, port: int, handler: FrameHandler, *,
                 max_request_bytes: int, idle_timeout_ms: int, queued_max_bytes: int = -1, send_buffer_bytes: int = -1,
                 receive_buffer_bytes: int = -1, listener_name: str = "PLAINTEXT",
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.loop = loop
        self.handler = handler
        # The listener this socket serves (Metadata answers with that listener's endpoints) and, for SSL and
        # SASL_SSL listeners, the TLS context every accepted connection is wrapped in.
        self.listener_name = listener_name
        self.ssl_context = ssl_context
        # The principal of a TLS client's certificate (peercert -> name), ssl.principal.mapping.rules applied.
        self.ssl_principal: Callable[[dict[str, Any] | None], str] | None = None
        self.on_connect: Callable[[Connection], None] | None = None
        self.track_arrival = False  # note when each frame arrives (request metrics: RequestQueueTimeMs)
        self.max_request_bytes = max_request_bytes
        # queued.max.request.bytes: Kafka's request memory pool, shared by this listener's connections (<= 0: none)
        self.queued_max_bytes = queued_max_bytes
        self.queued_bytes = 0
        self.memory_waiters: deque[Connection] = deque()
        self.idle_timeout_s = idle_timeout_ms / 1000 if idle_timeout_ms >= 0 else None
        self.connections: dict[int, Connection] = {}
        # Requests being handled (their handlers awaited something): kept so shutdown can cancel and await them.
        self.in_flight: set[asyncio.Future[Response | None]] = set()
        self._next_id = 0
        # Shared by all connections: the loop runs one read callback at a time and each one copies what it keeps.
        self.recv_scratch = memoryview(bytearray(_RECV_SIZE))
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Kafka's socket.send/receive.buffer.bytes; -1 leaves the kernel's autotuning. The receive buffer is set on
        # the listening socket so accepted connections inherit it before the TCP window is negotiated.
        self.send_buffer_bytes = send_buffer_bytes
        if receive_buffer_bytes > 0:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
        self.sock.bind((host, port))
        self.sock.listen(1024)
        self.sock.setblocking(False)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self._accepting = False
        self._accept_paused: asyncio.TimerHandle | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self.on_close: Callable[[Connection], None] | None = None

    def start(self) -> None:
        self.loop.add_reader(self.sock.fileno(), self._on_accept)
        self._accepting = True
        if self.idle_timeout_s is not None:
            self._schedule_idle_check()

    def _on_accept(self) -> None:
        for _ in range(64):
            try:
                sock, addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # Out of descriptors: the pending connection stays in the backlog and the socket stays readable,
                    # so accepting again at once would spin the loop and starve every connection already open.
                    # Pause accepting for a moment (one log line each time) and take the backlog on after it.
                    log.warning("accept failed: %s; accepting again in %.1f s", e.strerror or e, _ACCEPT_BACKOFF_S)
                    self.loop.remove_reader(self.sock.fileno())
                    self._accept_paused = self.loop.call_later(_ACCEPT_BACKOFF_S, self._resume_accepting)
                else:
                    log.warning("accept failed: %s", e.strerror or e)
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.send_buffer_bytes > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)
            self._next_id += 1
            if self.ssl_context is None:
                conn = Connection(self, sock, (addr[0], addr[1]), self._next_id)
            else:
                from broker.network.tls_connection import wrap

                tls = wrap(self, sock, (addr[0], addr[1]), self._next_id, self.ssl_context)
                if tls is None:
                    continue
                conn = tls
            self.connections[conn.id] = conn
            if self.on_connect is not None:
                self.on_connect(conn)

    def reserve(self, size: int) -> bool:
        """Take `size` bytes from the pool for a frame; False while it is used up (Kafka's non-strict
        SimpleMemoryPool: any room left admits a frame, which may take the pool below zero)."""
        if self.queued_bytes >= self.queued_max_bytes:
            return False
        self.queued_bytes += size
        return True

    def release(self, size: int) -> None:
        self.queued_bytes -= size
        while self.memory_waiters and self.queued_bytes < self.queued_max_bytes:
            self.memory_waiters.popleft().memory_available()

    def _resume_accepting(self) -> None:
        self._accept_paused = None
        if self._accepting:
            self.loop.add_reader(self.sock.fileno(), self._on_accept)

    def _forget(self, conn: Connection) -> None:
        self.connections.pop(conn.id, None)
        if self.on_close is not None:
            self.on_close(conn)

    def _schedule_idle_check(self) -> None:
        assert self.idle_timeout_s is not None
        interval = min(max(self.idle_timeout_s / 4, 0.05), 30.0)
        self._idle_timer = self.loop.call_later(interval, self._check_idle)

    def _check_idle(self) -> None:
        assert self.idle_timeout_s is not None
        deadline = time.monotonic() - self.idle_timeout_s
        for conn in list(self.connections.values()):
            if conn.last_active < deadline and not conn.busy and not conn._out:
                conn.close(f"idle for more than {self.idle_timeout_s * 1000:.0f} ms (connections.max.idle.ms)")
        self._schedule_idle_check()

    def stop_accepting(self) -> None:
        if self._accept_paused is not None:
            self._accept_paused.cancel()
            self._accept_paused = None
        if self._accepting:
            self.loop.remove_reader(self.sock.fileno())
            self._accepting = False
            self.sock.close()
        if self._idle_timer is not None:
            self._idle_timer.cancel()

    async def drain(self, timeout_s: float) -> None:
        """Wait (bounded) until no connection has a request in flight or output pending."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not any(c.busy or c._out for c in self.connections.values()):
                return
            await asyncio.sleep(0.01)

    def close_all(self) -> None:
        for conn in list(self.connections.values()):
            conn.close(None)

    async def close(self) -> None:
        """Close every connection, then cancel the requests still being handled and wait for them to end."""
        self.close_all()
        tasks = list(self.in_flight)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
