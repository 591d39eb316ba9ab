"""Frames in, typed messages out, and back: the sans-I/O request/response codec.

Contract:
- A *frame* is the bytes after the 4-byte size prefix. `read_frame_size` checks that prefix against
  `socket.request.max.bytes` before anything is allocated for the frame.
- `decode_request(frame)` parses the request header (v0 for ControlledShutdown v0, v1, or v2 for
  flexible versions) and the body; the result carries `.header`, `.API_KEY` and `.API_VERSION`.
  Malformed input of any kind (truncation, bad lengths or varints, non-UTF-8 strings, a null in a string,
  bytes or array field the schema does not make nullable at that version, a bad tagged-field section) raises
  `MalformedMessage`, its message naming the API, the version and, where our checks catch it, the field (Kafka's
  "non-nullable field topics was serialized as null"), with the request header when it could be read, so the
  broker can log the client. Handlers therefore never see None where Kafka's schema promises a value.
  Bytes left after a request body are ignored, as Kafka's broker ignores them (librdkafka 2.x sends some);
  bytes left after a response body are malformed. An API key we do not
  implement raises `UnknownApiKey`; a version outside `SUPPORTED_VERSIONS` raises `UnsupportedVersion`.
  Both carry the parsed header when it could be read.
  No other exception escapes, and nothing is allocated beyond a constant factor of the frame's size.
- `records` fields of ProduceRequest (and FetchResponse) decode as zero-copy memoryviews into `frame`;
  when `frame` is a `bytearray` they are writable, so the broker may patch offsets in place.
- `encode_request` / `encode_response` produce frames without the size prefix. Responses use header v1
  when the body version is flexible, except ApiVersions, whose response header is always v0.
- decode followed by encode gives back the same bytes for any valid frame (no bytes after the body),
  unknown tagged fields included.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from struct import pack, pack_into, unpack_from
from typing import Any

from kafka.protocol.api_header import RequestHeader, ResponseHeader
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.codecs import EncodeBuffer

from protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from protocol.errors import (
    InvalidFrameSize,
    MalformedMessage,
    ProtocolError,
    UnknownApiKey,
    UnsupportedVersion,
)
from protocol.kafka_python_ext import decode_tagged_fields, uvarint_bytes
from protocol.messages import request_class, response_class

Frame = bytes | bytearray | memoryview

_UNSUPPORTED_VERSION = 35

# Kafka's socket.request.max.bytes default.
DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024

# The tagged-field tables for headers: neither header version defines a known tag, so every tag in a
# header is kept raw in `unknown_tags`.
_REQUEST_HEADER_TAGS = RequestHeader._struct.tagged_fields(2)
_RESPONSE_HEADER_TAGS = ResponseHeader._struct.tagged_fields(1)


def read_frame_size(prefix: Frame, max_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> int:
    """Validate the 4-byte big-endian size prefix; the caller allocates only after this returns."""
    if len(prefix) != 4:
        raise InvalidFrameSize(f'size prefix must be 4 bytes, got {len(prefix)}')
    (size,) = unpack_from('>i', prefix, 0)
    if size <= 0:
        raise InvalidFrameSize(f'invalid frame size {size}')
    if size > max_bytes:
        raise InvalidFrameSize(f'frame size {size} larger than socket.request.max.bytes {max_bytes}')
    return size


def request_header_version(api_key: int, api_version: int) -> int:
    """Header layout for a request: 0 (no client_id), 1, or 2 (flexible: tagged fields)."""
    known = _REQUEST_HEADER_VERSIONS.get((api_key, api_version))
    if known is not None:
        return known
    version = _request_header_version(api_key, api_version)
    supported = SUPPORTED_VERSIONS.get(api_key)
    if supported is not None and supported[0] <= api_version <= supported[1]:
        _REQUEST_HEADER_VERSIONS[(api_key, api_version)] = version  # bounded: only versions we serve
    return version


def _request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        # ControlledShutdown v0 predates client_id in the header.
        return 0
    try:
        cls = request_class(api_key)
    except UnknownApiKey:
        return 1
    return 2 if api_version >= 0 and cls.flexible_version_q(api_version) else 1


# Filled on first use, not at import: computing it needs every API's message class, which would import
# them all at start-up (see protocol.messages).
_REQUEST_HEADER_VERSIONS: dict[tuple[int, int], int] = {}


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        # Clients read the ApiVersions response before they know our versions, so it is always v0.
        return 0
    return 1 if response_class(api_key).flexible_version_q(api_version) else 0


# --- compiled body codecs, cached per (api_key, version) -----------------------------------------------

_REQUEST_DECODERS: dict[tuple[int, int], Callable[[Any, int], tuple[Any, int]]] = {}
_RESPONSE_DECODERS: dict[tuple[int, int], Callable[[Any, int], tuple[Any, int]]] = {}


def _compiled_decoder(cls: type[ApiMessage], version: int) -> Callable[[Any, int], tuple[Any, int]]:
    flexible = cls.flexible_version_q(version)
    return cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls)


def _request_decoder(api_key: int, version: int) -> Callable[[Any, int], tuple[Any, int]]:
    key = (api_key, version)
    fn = _REQUEST_DECODERS.get(key)
    if fn is None:
        fn = _REQUEST_DECODERS[key] = _compiled_decoder(request_class(api_key), version)
    return fn


def _response_decoder(api_key: int, version: int) -> Callable[[Any, int], tuple[Any, int]]:
    key = (api_key, version)
    fn = _RESPONSE_DECODERS.get(key)
    if fn is None:
        fn = _RESPONSE_DECODERS[key] = _compiled_decoder(response_class(api_key), version)
    return fn


def _check_version(api_key: int, api_version: int, header: Any) -> None:
    supported = SUPPORTED_VERSIONS.get(api_key)
    if supported is None:
        raise UnknownApiKey(f'unknown api key {api_key}', header)
    if not supported[0] <= api_version <= supported[1]:
        raise UnsupportedVersion(
            f'{ApiKey(api_key).name} v{api_version} not supported'
            f' (we implement v{supported[0]}-v{supported[1]})',
            header)


# --- request headers ------------------------------------------------------------------------------------

def _parse_request_header(mv: memoryview, header_version: int) -> tuple[RequestHeader, int]:
    n = len(mv)
    if n < 8:
        raise MalformedMessage(f'request header needs 8 bytes, frame has {n}')
    api_key, api_version, correlation_id = unpack_from('>hhi', mv, 0)
    pos = 8
    client_id = None
    if header_version >= 1:
        if n < 10:
            raise MalformedMessage('truncated client_id length')
        (length,) = unpack_from('>h', mv, 8)
        pos = 10
        if length >= 0:
            if pos + length > n:
                raise MalformedMessage('client_id overruns the frame')
            try:
                client_id = str(mv[pos:pos + length], 'utf-8')
            except UnicodeDecodeError as e:
                raise MalformedMessage('client_id is not UTF-8') from e
            pos += length
        elif length != -1:
            raise MalformedMessage(f'negative client_id length {length}')
    header = object.__new__(RequestHeader)
    header._version = header_version
    header.tags = None
    header.unknown_tags = None
    header.request_api_key = api_key
    header.request_api_version = api_version
    header.correlation_id = correlation_id
    header.client_id = client_id
    if header_version >= 2:
        if pos >= n:
            raise MalformedMessage('truncated header tagged fields')
        if mv[pos] == 0:
            pos += 1
        else:
            pos = decode_tagged_fields(_REQUEST_HEADER_TAGS, header, mv, pos, 2)
    return header, pos


def _minimal_header(mv: memoryview) -> RequestHeader | None:
    """Best-effort header (key, version, correlation id) for answering a request we cannot parse."""
    if len(mv) < 8:
        return None
    header = object.__new__(RequestHeader)
    header._version = 1
    header.tags = None
    header.unknown_tags = None
    header.request_api_key, header.request_api_version, header.correlation_id = unpack_from('>hhi', mv, 0)
    header.client_id = None
    return header


def _reason(error: Exception) -> str:
    """What was wrong, in one short line: our checks name the field; Python's own errors are cut short (a
    UnicodeDecodeError's repr holds the whole frame)."""
    if isinstance(error, ProtocolError):
        return str(error)
    if isinstance(error, UnicodeDecodeError):
        return 'a string is not valid UTF-8'
    text = f'{type(error).__name__}: {error}'
    return text if len(text) <= 160 else text[:157] + '...'


def decode_request(frame: Frame) -> ApiMessage:
    mv = frame if isinstance(frame, memoryview) else memoryview(frame)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast('B')
    n = len(mv)
    if n < 8:
        raise MalformedMessage(f'request frame of {n} bytes is shorter than a request header')
    api_key, api_version = unpack_from('>hh', mv, 0)
    supported = SUPPORTED_VERSIONS.get(api_key)
    if supported is None or not supported[0] <= api_version <= supported[1]:
        try:
            header, _ = _parse_request_header(mv, request_header_version(api_key, api_version))
        except ProtocolError:
            header = _minimal_header(mv)
        _check_version(api_key, api_version, header)
    header = None
    try:
        header, pos = _parse_request_header(mv, request_header_version(api_key, api_version))
        request, pos = _request_decoder(api_key, api_version)(mv, pos)
    except Exception as e:  # noqa: BLE001 - any failure inside the generated decoder is malformed input
        raise MalformedMessage(f'malformed {ApiKey(api_key).name} v{api_version} request: {_reason(e)}',
                               header or _minimal_header(mv)) from None
    if pos > n:
        raise MalformedMessage(f'{ApiKey(api_key).name} v{api_version} request overruns the frame', header)
    # Bytes left after the body are ignored, as Kafka's broker ignores them: librdkafka 2.x sends a
    # Metadata v12 request with an extra boolean and tag section, and Kafka answers it.
    request._header = header
    return request


def _write_tags(out: Any, tagged: Any, item: Any) -> None:
    tagged.encode_into(item, out, version=None)


_BODY_ENCODERS: dict[tuple[type, int], Callable[[Any, Any], None]] = {}
_local = threading.local()


def _body_encoder(cls: type[ApiMessage], version: int) -> Callable[[Any, Any], None]:
    fn = _BODY_ENCODERS.get((cls, version))
    if fn is None:
        flexible = cls.flexible_version_q(version)
        fn = _BODY_ENCODERS[(cls, version)] = cls._struct.compiled_encode_into(
            version, compact=flexible, tagged=flexible)
    return fn


def _buffer() -> EncodeBuffer:
    """This thread's reusable encode buffer (encoders never nest, so one per thread is enough)."""
    out = getattr(_local, 'out', None)
    if out is None:
        out = _local.out = EncodeBuffer()
    out.pos = 0
    return out


def encode_request(request: ApiMessage) -> bytes:
    header = request._header
    if header is None:
        raise ValueError('request has no header: call with_header(correlation_id=..., client_id=...) first')
    api_key = request.API_KEY
    version = request.API_VERSION
    header_version = request_header_version(api_key, version)
    encode_body = _body_encoder(type(request), version)
    out = _buffer()
    out.ensure(8)
    pack_into('>hhi', out.buf, 0, api_key, version, header.correlation_id)
    out.pos = 8
    if header_version >= 1:
        client_id = header.client_id
        if client_id is None:
            out.ensure(2)
            pack_into('>h', out.buf, out.pos, -1)
            out.pos += 2
        else:
            raw = client_id.encode('utf-8')
            out.ensure(2 + len(raw))
            pack_into('>h', out.buf, out.pos, len(raw))
            out.buf[out.pos + 2:out.pos + 2 + len(raw)] = raw
            out.pos += 2 + len(raw)
    if header_version >= 2:
        _write_tags(out, _REQUEST_HEADER_TAGS, header)
    encode_body(request, out)
    return bytes(memoryview(out.buf)[:out.pos])


# --- responses ------------------------------------------------------------------------------------------

def _parse_response_header(mv: memoryview, header_version: int) -> tuple[ResponseHeader, int]:
    if len(mv) < 4:
        raise MalformedMessage('response frame shorter than its header')
    header = object.__new__(ResponseHeader)
    header._version = header_version
    header.tags = None
    header.unknown_tags = None
    (header.correlation_id,) = unpack_from('>i', mv, 0)
    pos = 4
    if header_version >= 1:
        if pos >= len(mv):
            raise MalformedMessage('truncated response header tagged fields')
        if mv[pos] == 0:
            pos += 1
        else:
            pos = decode_tagged_fields(_RESPONSE_HEADER_TAGS, header, mv, pos, 1)
    return header, pos


def decode_response(frame: Frame, api_key: int, api_version: int) -> ApiMessage:
    mv = frame if isinstance(frame, memoryview) else memoryview(frame)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast('B')
    _check_version(api_key, api_version, None)
    try:
        header, pos = _parse_response_header(mv, response_header_version(api_key, api_version))
        if (api_key == ApiKey.API_VERSIONS and len(mv) >= pos + 2
                and unpack_from('>h', mv, pos)[0] == _UNSUPPORTED_VERSION):
            # A broker answering an ApiVersions version it does not support replies in the v0 layout
            # (KIP-511); clients read such a response as v0, and so do we.
            api_version = 0
        response, pos = _response_decoder(api_key, api_version)(mv, pos)
    except ProtocolError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure inside the generated decoder is malformed input
        raise MalformedMessage(f'malformed {ApiKey(api_key).name} v{api_version} response: {e!r}') from None
    if pos != len(mv):
        raise MalformedMessage(f'{ApiKey(api_key).name} v{api_version} response: body does not end the frame')
    response._header = header
    return response


def encode_response_header_into(out: Any, response: ApiMessage) -> None:
    header = response._header
    if header is None:
        raise ValueError('response has no header: call with_header(correlation_id=...) first')
    out.ensure(4)
    pack_into('>i', out.buf, out.pos, header.correlation_id)
    out.pos += 4
    if response_header_version(response.API_KEY, response.API_VERSION) >= 1:
        _write_tags(out, _RESPONSE_HEADER_TAGS, header)


def encode_response(response: ApiMessage) -> bytes:
    if response.API_KEY == ApiKey.FETCH:
        # The hand-written FetchResponse encoder: same bytes, a fraction of the per-partition cost.
        from protocol.fetch_encoding import encode_fetch_response

        return encode_fetch_response(response)
    encode_body = _body_encoder(type(response), response.API_VERSION)
    out = _buffer()
    encode_response_header_into(out, response)
    encode_body(response, out)
    return bytes(memoryview(out.buf)[:out.pos])


def api_versions_response(api_version: int, correlation_id: int, throttle_time_ms: int = 0) -> ApiMessage:
    """An ApiVersions response listing this codec's whole table (`SUPPORTED_VERSIONS`), for peers such as
    test brokers that answer whatever the codec can decode. A real broker lists what its handlers serve."""
    cls = response_class(ApiKey.API_VERSIONS)
    response = cls[api_version](
        error_code=0,
        api_keys=[cls.ApiVersion(api_key=key, min_version=low, max_version=high)
                  for key, (low, high) in sorted(SUPPORTED_VERSIONS.items())],
        throttle_time_ms=throttle_time_ms)
    response.with_header(correlation_id=correlation_id)
    return response


def api_versions_fallback_response(header: Any, versions: tuple[int, int] | None = None) -> bytes:
    """The frame Kafka sends for an ApiVersions request at a version it does not implement.

    As Kafka (KIP-511): response header v0, body in the v0 layout, error UNSUPPORTED_VERSION, and the
    api_keys array holding only ApiVersions' own range (`versions`, the codec's range unless given), so
    the client retries at a version that is served.
    """
    correlation_id = header.correlation_id if header is not None else 0
    low, high = versions if versions is not None else SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
    return pack('>ihihhh', correlation_id, 35, 1, ApiKey.API_VERSIONS, low, high)


__all__ = [
    'DEFAULT_MAX_REQUEST_BYTES',
    'api_versions_fallback_response',
    'api_versions_response',
    'decode_request',
    'decode_response',
    'encode_request',
    'encode_response',
    'read_frame_size',
    'request_header_version',
    'response_header_version',
    'uvarint_bytes',
]
