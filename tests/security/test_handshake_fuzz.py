"""Fuzzed TLS and SASL handshakes (seeded, bounded in count): real ClientHellos truncated, bit-flipped or
replaced by noise on the SSL listener; SASL frames with random, truncated and oversized contents for every
mechanism on the SASL listener. The broker closes those connections, keeps serving a stock client on each
listener afterwards, and its memory does not grow with the garbage."""

from __future__ import annotations

import logging
import random
import socket
import ssl
import struct
from typing import Any

import pytest
from confluent_kafka import Producer

from protocol import ApiKey, encode_request, request_class

SEED = 20261124
Handshake = request_class(ApiKey.SASL_HANDSHAKE)
Authenticate = request_class(ApiKey.SASL_AUTHENTICATE)


def rss_bytes() -> int:
    with open("/proc/self/status") as f:  # the embedded broker runs in this process
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def client_hello(pki: Any) -> bytes:
    """The first flight of a real TLS client, from Python's ssl over memory buffers."""
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def mutate(rng: random.Random, data: bytes) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return data[:rng.randrange(len(data))]
    if kind == 1:
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if kind == 2:
        return rng.randbytes(rng.randint(1, 2048))
    return data + rng.randbytes(rng.randint(1, 512))


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def request_bytes(request: Any, correlation: int) -> bytes:
    request.with_header(correlation_id=correlation, client_id="fuzz")
    return frame(bytes(encode_request(request)))


def sasl_payloads(rng: random.Random) -> bytes:
    mechanism = rng.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI", "", "X" * 300])
    first = request_bytes(Handshake[1](mechanism=mechanism), 1)
    tokens = {
        "PLAIN": [b"\x00alice", b"alice\x00\x00", b"\x00" * 5, rng.randbytes(40)],
        "SCRAM-SHA-256": [b"n,,n=bob,r=", b"n,,n=bob", b"p=,r=", b"n,,n=\xff\xfe,r=abc", rng.randbytes(60)],
        "OAUTHBEARER": [b"n,,\x01auth=Bearer \x01\x01", b"n,,\x01auth=Bearer a.b.c\x01\x01", b"\x01",
                        b"n,a=\xff,\x01\x01", rng.randbytes(80)],
    }.get(mechanism, [rng.randbytes(30)])
    token = rng.choice(tokens)
    second = request_bytes(Authenticate[rng.choice([0, 1, 2])](auth_bytes=token), 2)
    choice = rng.randrange(5)
    if choice == 0:
        return first + second
    if choice == 1:
        return first + second[:rng.randrange(1, len(second))]
    if choice == 2:
        return first + struct.pack(">i", rng.choice([600_000, 2**31 - 1, -5])) + rng.randbytes(16)
    if choice == 3:
        return mutate(rng, first + second)
    return first + frame(rng.randbytes(rng.randint(0, 300)))


def send_and_drop(port: int, payload: bytes, wait: bool) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            s.sendall(payload)
            if wait:  # let the broker answer or close before we go
                s.settimeout(1.5)
                while s.recv(65536):
                    pass
        except OSError:
            pass  # the broker closed first: what we want


def produce_works(bootstrap: str, extra: dict[str, Any]) -> None:
    errors: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 15000, **extra})
    producer.produce("fuzz-survivors", b"still here", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(20)
    assert errors == [None]


def test_fuzzed_tls_and_sasl_handshakes(secured: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="broker")
    rng = random.Random(SEED)
    hello = client_hello(secured.pki)
    before = rss_bytes()
    for i in range(150):
        send_and_drop(secured.ports["SSL"], mutate(rng, hello), wait=i % 15 == 0)
    for i in range(300):
        send_and_drop(secured.ports["SASL_PLAINTEXT"], sasl_payloads(rng), wait=i % 15 == 0)
    for i in range(60):  # SASL over TLS: a real handshake, then garbage SASL
        ctx = ssl.create_default_context(cafile=str(secured.pki.ca))
        with socket.create_connection(("127.0.0.1", secured.ports["SASL_SSL"]), timeout=5) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            try:
                s.sendall(sasl_payloads(rng))
                if i % 15 == 0:
                    s.settimeout(1.5)
                    while s.recv(65536):
                        pass
            except OSError:
                pass
    grown = rss_bytes() - before
    crashes = [r.getMessage() for r in caplog.records if r.name.startswith("broker") and r.levelno >= logging.ERROR]
    assert crashes == []  # each bad handshake is a closed connection and an INFO line, never a handler error
    assert grown < 64 * 1024 * 1024, f"RSS grew by {grown / 2**20:.0f} MiB over 510 fuzzed handshakes"
    ca = {"ssl.ca.location": str(secured.pki.ca)}
    produce_works(secured.bootstrap("SSL"), {"security.protocol": "SSL", **ca})
    produce_works(secured.bootstrap("SASL_PLAINTEXT"), {"security.protocol": "SASL_PLAINTEXT",
                                                        "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "bob",
                                                        "sasl.password": "bob-secret"})
    produce_works(secured.bootstrap("SASL_SSL"), {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                                  "sasl.username": "alice", "sasl.password": "alice-secret", **ca})
