"""Broker-to-broker requests: a small Kafka client connection for the controller channel and the
replica fetchers (Kafka's NetworkClient / BlockingSend, on asyncio).

`BrokerConnection.send(request)` frames a request from the protocol codec, writes it, and returns the
decoded response. It connects lazily, negotiates versions with ApiVersions once per connection (the
highest version both sides serve, so a broker of another version could answer, capped per API by
`version_caps`: what inter.broker.protocol.version allows), and raises
`BrokerUnavailable` on connect/IO failures or `timeout` — the caller decides to retry or back off —, its
subclass `UnsupportedApi` when the broker serves no common version of the API.
Requests on one connection are sent one at a time (Kafka's inter-broker clients do the same).
With a `ClientSecurity` for an SSL/SASL inter-broker listener it connects with TLS and, for SASL, authenticates
right after ApiVersions (SaslHandshake v1, then SaslAuthenticate with PLAIN or SCRAM-SHA-256/512), as
Kafka's brokers do; a failed authentication is `BrokerUnavailable` with the broker's message.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import ssl
from typing import Any

from broker.security.client import PLAINTEXT_CLIENT, ClientSecurity
from protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ProtocolError,
    decode_response,
    encode_request,
    request_class,
)

log = logging.getLogger("broker.inter_broker")


class BrokerUnavailable(Exception):
    pass


class UnsupportedApi(BrokerUnavailable):
    """The broker does not serve the API, or no version of it we speak (Kafka's UnsupportedVersionException
    on the client side): some callers carry on without it."""




# A response bigger than this closes the connection (a corrupt size field); fetch responses are bounded by
# replica.fetch.response.max.bytes, far below it.
_MAX_RESPONSE_BYTES = 1 << 30


class _ResponseReader(asyncio.BufferedProtocol):
    """Reads size-prefixed response frames straight from the socket into one buffer per frame.

    The kernel copies a response once, into a buffer of exactly its size, and that buffer is the frame the
    decoder takes its zero-copy `records` views from: a replica fetcher appends a 1 MiB fetch response without
    any copy in Python (a StreamReader copied it three times: into bytes per read, into its buffer, out of it).
    One request is in flight per connection, so one waiter at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._size = bytearray(4)
        self._frame: bytearray | None = None
        self._filled = 0
        self._frames: collections.deque[bytearray] = collections.deque()
        self._waiter: asyncio.Future | None = None
        self._lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        target = self._size if self._frame is None else self._frame
        return memoryview(target)[self._filled:]

    def buffer_updated(self, nbytes: int) -> None:
        self._filled += nbytes
        if self._frame is None:
            if self._filled < 4:
                return
            size = int.from_bytes(self._size, "big")
            if not 0 <= size <= _MAX_RESPONSE_BYTES:
                self._fail(ConnectionError(f"response size {size} out of bounds"))
                return
            self._frame, self._filled = bytearray(size), 0
        if self._filled == len(self._frame):
            frame, self._frame, self._filled = self._frame, None, 0
            waiter, self._waiter = self._waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result(frame)
            else:
                self._frames.append(frame)

    def _fail(self, exc: Exception) -> None:
        self._lost = exc
        if self.transport is not None:
            self.transport.abort()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("connection closed by the broker"))

    def eof_received(self) -> bool:
        self._fail(ConnectionError("connection closed by the broker"))
        return False

    @property
    def lost(self) -> bool:
        return self._lost is not None

    async def read_frame(self) -> bytearray:
        if self._frames:
            return self._frames.popleft()
        if self._lost is not None:
            raise self._lost
        self._waiter = asyncio.get_running_loop().create_future()
        return await self._waiter


class BrokerConnection:
    def __init__(self, host: str, port: int, client_id: str, *, timeout_s: float = 30.0,
                 version_caps: dict[int, int] | None = None, security: ClientSecurity = PLAINTEXT_CLIENT) -> None:
        self.host = host
        self.security = security
        # Highest versions to send whatever the peer serves (the controller's requests by
        # inter.broker.protocol.version, as Kafka's controller picks them).
        self.version_caps = version_caps or {}
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._reader: _ResponseReader | None = None
        self._correlation = 0
        self._versions: dict[int, tuple[int, int]] = {}
        self._lock = asyncio.Lock()  # one request in flight per connection, in order

    def __repr__(self) -> str:
        return f"BrokerConnection({self.host}:{self.port})"

    async def _connect(self) -> None:
        try:
            async with asyncio.timeout(self.timeout_s):
                _, self._reader = await asyncio.get_running_loop().create_connection(
                    _ResponseReader, self.host, self.port, ssl=self.security.ssl_context,
                    server_hostname=self.host if self.security.ssl_context is not None else None)
        except (OSError, TimeoutError, ssl.SSLError) as e:
            raise BrokerUnavailable(f"cannot connect to {self.host}:{self.port}: {e}") from None
        self._versions = {}
        req = request_class(ApiKey.API_VERSIONS)[3](client_software_name="kafka-wire-broker",
                                                   client_software_version="0.1")
        resp = await self._roundtrip(req, 3)
        if resp.error_code != 0:
            raise BrokerUnavailable(f"ApiVersions to {self.host}:{self.port} failed: error {resp.error_code}")
        self._versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
        if self.security.mechanism is not None:
            await self._authenticate()

    async def _authenticate(self) -> None:
        from broker.security.scram import ScramClient, ScramError

        mechanism = self.security.mechanism
        assert mechanism is not None
        handshake = await self._roundtrip(request_class(ApiKey.SASL_HANDSHAKE)[1](mechanism=mechanism), 1)
        if handshake.error_code != 0:
            self.close()
            raise BrokerUnavailable(f"{self.host}:{self.port} refused SASL mechanism {mechanism} "
                                    f"(error {handshake.error_code}; enabled: {handshake.mechanisms})")
        Auth = request_class(ApiKey.SASL_AUTHENTICATE)[2]

        async def step(token: bytes) -> bytes:
            resp = await self._roundtrip(Auth(auth_bytes=token), 2)
            if resp.error_code != 0:
                self.close()
                raise BrokerUnavailable(f"SASL authentication to {self.host}:{self.port} failed: "
                                        f"{resp.error_message}")
            return bytes(resp.auth_bytes)

        if mechanism == "PLAIN":
            await step(f"\0{self.security.username}\0{self.security.password}".encode())
            return
        client = ScramClient(mechanism, self.security.username, self.security.password)
        try:
            client.verify(await step(client.final(await step(client.first()))))
        except (ScramError, KeyError, ValueError) as e:
            self.close()
            raise BrokerUnavailable(f"SCRAM exchange with {self.host}:{self.port} failed: {e}") from None

    def version_for(self, api_key: int) -> int:
        ours = SUPPORTED_VERSIONS[api_key]
        theirs = self._versions.get(api_key)
        if theirs is None:
            raise UnsupportedApi(f"{self.host}:{self.port} does not serve API {api_key}")
        hi = min(ours[1], theirs[1], self.version_caps.get(api_key, ours[1]))
        if hi < max(ours[0], theirs[0]):
            raise UnsupportedApi(f"no common version of API {api_key} with {self.host}:{self.port}")
        return hi

    async def send(self, build: Any, api_key: int) -> Any:
        """`build(version) -> request`; sends it at the best common version, returns the response."""
        async with self._lock:
            if self._reader is not None and self._reader.lost:
                # The broker closed it (or it failed) while we were idle: a closed transport refuses writes.
                self.close()
            if self._reader is None:
                await self._connect()
            version = self.version_for(api_key)
            return await self._roundtrip(build(version), version)

    async def _roundtrip(self, request: Any, version: int) -> Any:
        reader = self._reader
        assert reader is not None and reader.transport is not None
        self._correlation = (self._correlation + 1) & 0x7FFFFFFF
        request.with_header(correlation_id=self._correlation, client_id=self.client_id)
        frame = encode_request(request)
        try:
            # Requests are small and one is in flight: the transport buffers what the socket does not take.
            reader.transport.write(len(frame).to_bytes(4, "big") + frame)
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for swallows a cancellation that arrives as
            # the read completes, and a fetcher or controller channel cancelled at shutdown then ran on forever.
            async with asyncio.timeout(self.timeout_s):
                body = await reader.read_frame()
        except asyncio.CancelledError:
            self.close()  # the answer would arrive for nobody and be read as the next request's
            raise
        except (OSError, TimeoutError, RuntimeError) as e:  # RuntimeError: uvloop's write on a closed transport
            self.close()
            raise BrokerUnavailable(f"request to {self.host}:{self.port} failed: {e or type(e).__name__}") from None
        try:
            response = decode_response(body, request.API_KEY, version)
        except ProtocolError as e:
            self.close()
            raise BrokerUnavailable(f"bad response from {self.host}:{self.port}: {e}") from None
        if response.header.correlation_id != self._correlation:
            self.close()
            raise BrokerUnavailable(f"correlation id mismatch from {self.host}:{self.port}")
        return response

    def close(self) -> None:
        if self._reader is not None and self._reader.transport is not None:
            try:
                self._reader.transport.close()
            except Exception:
                pass
        self._reader = None
