"""A connection of an SSL or SASL_SSL listener: the socket layer's Connection over Python's `ssl` module.

Contract (beyond broker.network.socket_server's):
- The TLS handshake runs first, non-blocking, driven by readability/writability; a client that fails it
  (wrong CA, no certificate where `ssl.client.auth=required`, garbage or a truncated hello) closes only its
  own connection, with one log line. A handshake that has not finished within `handshake_timeout_s` closes too.
- Once the handshake is done the principal is the client certificate's subject DN (`User:CN=...`) when it sent
  one, mapped by the listener's `ssl.principal.mapping.rules` (no rule applies: the connection closes), else
  User:ANONYMOUS; requests then flow as on a PLAINTEXT connection.
- Output cannot use sendmsg or sendfile over TLS (Python's ssl has no kTLS sendfile): queued parts are
  coalesced into chunks of up to `_CHUNK` bytes, fetched file ranges read with os.pread, and each chunk is
  written with SSLSocket.send, retried with the same bytes after SSLWantWrite as OpenSSL requires.
- One readiness callback reads up to `_READS_PER_CALLBACK` TLS records while reads make progress, and always
  what OpenSSL already decrypted (`pending()`), before waiting for the socket again.
"""

from __future__ import annotations

import errno
import os
import socket
import ssl
import time
from typing import TYPE_CHECKING

from broker.network.socket_server import Connection, SendfileChunk, log
from broker.security.principal_mapping import NoMatchingRule
from broker.security.tls import principal_name

if TYPE_CHECKING:
    from broker.network.socket_server import SocketServer

_CHUNK = 256 * 1024
_READS_PER_CALLBACK = 16


class TlsConnection(Connection):
    __slots__ = ("_handshaken", "_handshake_timer", "_tls_chunk")

    def __init__(self, server: SocketServer, sock: ssl.SSLSocket, peer: tuple[str, int], conn_id: int,
                 handshake_timeout_s: float = 10.0) -> None:
        self._handshaken = False
        self._tls_chunk: memoryview | None = None  # the bytes SSLSocket.send last refused, retried as they are
        super().__init__(server, sock, peer, conn_id)
        self._handshake_timer = self.loop.call_later(handshake_timeout_s, self._handshake_expired)

    def _handshake_expired(self) -> None:
        if not self._handshaken:
            self.close("TLS handshake did not complete in time")

    def _do_handshake(self) -> None:
        sock = self.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            if self._writing:
                self.loop.remove_writer(self.fd)
                self._writing = False
            return
        except ssl.SSLWantWriteError:
            if not self._writing:
                self.loop.add_writer(self.fd, self._do_handshake)
                self._writing = True
            return
        except (ssl.SSLError, OSError) as e:
            reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or str(e) or type(e).__name__
            self.close(f"TLS handshake failed: {reason}")
            return
        self._handshaken = True
        self._handshake_timer.cancel()
        if self._writing:
            self.loop.remove_writer(self.fd)
            self._writing = False
        principal = self.server.ssl_principal or principal_name
        try:
            self.principal = "User:" + principal(sock.getpeercert())
        except NoMatchingRule as e:
            self.close(f"TLS principal: {e} (ssl.principal.mapping.rules)")  # as Kafka: no principal, no session
            return
        self.last_active = time.monotonic()
        if sock.pending():
            self._on_readable()

    def _on_readable(self) -> None:
        if not self._handshaken:
            self._do_handshake()
            return
        # One SSL read returns at most one TLS record (16 KiB): keep reading while reads make progress (bounded),
        # rather than wait for the loop's next readiness callback per record. OpenSSL may also hold decrypted
        # bytes a read did not take, which the socket will never signal.
        for _ in range(_READS_PER_CALLBACK):
            before = self.last_active
            super()._on_readable()
            if self.closed or not self._reading or (self.last_active == before and not self.sock.pending()):  # type: ignore[attr-defined]
                break

    def _resume_reading(self) -> None:
        was_reading = self._reading
        super()._resume_reading()
        if not was_reading and self._reading and self._handshaken and self.sock.pending():  # type: ignore[attr-defined]
            self.loop.call_soon(self._on_readable)

    def _coalesce(self) -> memoryview | None:
        """Replace the head of the output queue by one chunk of its bytes (up to _CHUNK); None if a file
        range could not be read in full (the file shrank under us)."""
        out = self._out
        chunk = bytearray()
        while out and len(chunk) < _CHUNK:
            item = out[0]
            if isinstance(item, SendfileChunk):
                want = min(item.length, _CHUNK - len(chunk))
                data = os.pread(item.fileno, want, item.offset)
                if not data:
                    return None
                chunk += data
                if len(data) < item.length:
                    item.offset += len(data)
                    item.length -= len(data)
                    break
                out.popleft()
            else:
                room = _CHUNK - len(chunk)
                if len(item) > room:
                    chunk += memoryview(item)[:room]
                    out[0] = memoryview(item)[room:]
                    break
                chunk += item
                out.popleft()
        view = memoryview(chunk)
        out.appendleft(view)
        return view

    def _flush(self) -> None:
        out = self._out
        sock = self.sock
        try:
            while out:
                head = out[0]
                if head is not self._tls_chunk:
                    chunk = self._coalesce()
                    if chunk is None:
                        self.close("segment file shrank while sending fetch data")
                        return
                    head = self._tls_chunk = chunk
                n = sock.send(head)
                self._out_bytes -= n
                self._written += n
                if n < len(head):
                    out[0] = self._tls_chunk = head[n:]
                else:
                    out.popleft()
                    self._tls_chunk = None
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            pass
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                self.close(f"write failed: {e.strerror or e}")
                return
        self._after_flush()


def wrap(server: SocketServer, sock: socket.socket, peer: tuple[str, int], conn_id: int,
         context: ssl.SSLContext) -> Connection | None:
    try:
        tls = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    except (ssl.SSLError, OSError) as e:
        log.warning("connection %s:%d: cannot start TLS: %s", peer[0], peer[1], e)
        sock.close()
        return None
    return TlsConnection(server, tls, peer, conn_id)
