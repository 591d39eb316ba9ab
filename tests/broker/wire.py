"""Raw-socket helpers for broker tests: send a request built with the protocol codec, read one response."""

from __future__ import annotations

import socket
import struct
from typing import Any

from protocol import decode_response, encode_request


def send(sock: socket.socket, request: Any, correlation_id: int) -> None:
    request.with_header(correlation_id=correlation_id, client_id="raw")
    frame = encode_request(request)
    sock.sendall(struct.pack(">i", len(frame)) + frame)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return bytes(buf)


def recv(sock: socket.socket, api_key: int, version: int) -> Any:
    size = struct.unpack(">i", recv_exactly(sock, 4))[0]
    return decode_response(recv_exactly(sock, size), api_key, version)


def roundtrip(sock: socket.socket, request: Any, correlation_id: int) -> Any:
    send(sock, request, correlation_id)
    return recv(sock, request.API_KEY, request.API_VERSION)
