"""Sans-I/O Kafka protocol codec: every request and response frame we serve, decoded and encoded.

Public API (see `codec.py` for the frame contract, `fetch_encoding.py` for zero-copy fetch responses):

    decode_request(frame) -> ApiMessage            # frame = bytes after the 4-byte size prefix
    encode_request(request) -> bytes
    decode_response(frame, api_key, api_version) -> ApiMessage
    encode_response(response) -> bytes
    encode_response_parts(response) -> (total_length, [bytes | memoryview | RecordsRef, ...])
    read_frame_size(prefix, max_bytes) -> int
    api_versions_fallback_response(header, versions=None) -> bytes
    api_versions_response(api_version, correlation_id, throttle_time_ms=0) -> ApiMessage  # the codec's table
    SUPPORTED_VERSIONS (what the codec decodes/encodes), ApiKey, request_class(api_key), response_class(api_key)
    errors: ErrorCode, ProtocolError, InvalidFrameSize, MalformedMessage, UnsupportedVersion, UnknownApiKey

Messages are kafka-python 3.0 `ApiMessage` objects (snake_case fields, `.header`, `.API_KEY`,
`.API_VERSION`); build one with `request_class(key)[version](field=...)` and `.with_header(...)`.
"""

from protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from protocol.codec import (
    DEFAULT_MAX_REQUEST_BYTES,
    api_versions_fallback_response,
    api_versions_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_frame_size,
    request_header_version,
    response_header_version,
)
from protocol.errors import (
    ErrorCode,
    InvalidFrameSize,
    MalformedMessage,
    ProtocolError,
    UnknownApiKey,
    UnsupportedVersion,
)
from protocol.fetch_encoding import RecordsRef, encode_response_parts
from protocol.messages import request_class, response_class

__all__ = [
    'DEFAULT_MAX_REQUEST_BYTES',
    'SUPPORTED_VERSIONS',
    'ApiKey',
    'ErrorCode',
    'InvalidFrameSize',
    'MalformedMessage',
    'ProtocolError',
    'RecordsRef',
    'UnknownApiKey',
    'UnsupportedVersion',
    'api_versions_fallback_response',
    'api_versions_response',
    'decode_request',
    'decode_response',
    'encode_request',
    'encode_response',
    'encode_response_parts',
    'read_frame_size',
    'request_class',
    'request_header_version',
    'response_class',
    'response_header_version',
]
