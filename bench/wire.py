"""Minimal raw-socket Kafka probes for the benchmark harness.

Contract: `api_versions_probe(host, port, timeout_s)` opens a TCP connection, sends one
ApiVersions v0 request (no client library, so nothing but the broker is timed) and returns
the list of (api_key, min_version, max_version) from a well-formed answer with error_code 0.
It raises `ProbeError` on any refusal, timeout, short read, oversized frame or error code.
`wait_for_api_versions` polls the probe until it succeeds or a deadline passes and returns
the moment of the first answer (time.monotonic()). The bench only talks to brokers it was
pointed at on loopback, but answers are still treated as untrusted: sizes are bounded.
"""

from __future__ import annotations

import socket
import struct
import time

API_VERSIONS_KEY = 18
# ApiVersions v0 answers list every API once; a few hundred bytes is normal.
MAX_API_VERSIONS_RESPONSE = 64 * 1024


class ProbeError(Exception):
    """The broker did not answer ApiVersions correctly (yet)."""


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ProbeError(f"connection closed after {len(chunks)} of {size} bytes")
        chunks += chunk
    return bytes(chunks)


def api_versions_probe(host: str, port: int, timeout_s: float = 1.0) -> list[tuple[int, int, int]]:
    client_id = b"bench-probe"
    correlation_id = 0x5EED
    header = struct.pack(">hhih", API_VERSIONS_KEY, 0, correlation_id, len(client_id)) + client_id
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(header)) + header)
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            if not 10 <= size <= MAX_API_VERSIONS_RESPONSE:
                raise ProbeError(f"ApiVersions response size {size} out of bounds")
            body = _recv_exact(sock, size)
    except OSError as exc:
        raise ProbeError(str(exc)) from exc
    got_correlation, error_code, count = struct.unpack_from(">ihi", body, 0)
    if got_correlation != correlation_id:
        raise ProbeError(f"correlation id {got_correlation} != {correlation_id}")
    if error_code != 0:
        raise ProbeError(f"ApiVersions error_code {error_code}")
    if not 0 <= count <= (size - 10) // 6:
        raise ProbeError(f"ApiVersions array length {count} does not fit the frame")
    return [struct.unpack_from(">hhh", body, 10 + 6 * i) for i in range(count)]


def wait_for_api_versions(host: str, port: int, deadline: float, poll_s: float = 0.002) -> float:
    """Poll until the first answered ApiVersions; returns its time.monotonic(), or raises ProbeError."""
    last_error = "not tried"
    while time.monotonic() < deadline:
        try:
            api_versions_probe(host, port, timeout_s=max(0.05, min(1.0, deadline - time.monotonic())))
            return time.monotonic()
        except ProbeError as exc:
            last_error = str(exc)
            time.sleep(poll_s)
    raise ProbeError(f"no ApiVersions answer from {host}:{port} before the deadline: {last_error}")


def free_port() -> int:
    """A currently free loopback port (racy by nature; callers retry on bind failure)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
