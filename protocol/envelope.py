"""The pieces of an Envelope (KIP-590) besides the message itself: how a forwarding broker names the client.

Contract:
- `serialize_principal(principal_type, name, token_authenticated)` gives the bytes of Kafka's
  DefaultKafkaPrincipalBuilder.serialize: an int16 version prefix (0), then DefaultPrincipalData v0 (flexible:
  compact string Type, compact string Name, bool TokenAuthenticated, empty tagged fields).
  `deserialize_principal(data)` reads them back as `(type, name, token_authenticated)`; an unknown version,
  truncated or trailing bytes raise `PrincipalDeserializationError` (Kafka's controller then answers the
  Envelope with PRINCIPAL_DESERIALIZATION_FAILURE).
- `address_bytes(host)` / `address_from_bytes(data)`: the client's address as Java's InetAddress.getAddress
  (4 bytes IPv4, 16 bytes IPv6); anything else raises ValueError.
"""

from __future__ import annotations

import ipaddress
import struct

from protocol.errors import MalformedMessage
from protocol.kafka_python_ext import read_uvarint, uvarint_bytes

PRINCIPAL_DATA_VERSION = 0


class PrincipalDeserializationError(MalformedMessage):
    pass


def _compact_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return uvarint_bytes(len(raw) + 1) + raw


def serialize_principal(principal_type: str, name: str, token_authenticated: bool = False) -> bytes:
    return (struct.pack(">h", PRINCIPAL_DATA_VERSION) + _compact_string(principal_type) + _compact_string(name)
            + (b"\x01" if token_authenticated else b"\x00") + b"\x00")


def deserialize_principal(data: bytes) -> tuple[str, str, bool]:
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        if version != PRINCIPAL_DATA_VERSION:
            raise PrincipalDeserializationError(f"Invalid principal data version {version}")
        pos = 2
        strings = []
        for _ in range(2):
            length, pos = read_uvarint(data, pos)
            if length == 0 or pos + length - 1 > len(data):
                raise PrincipalDeserializationError("principal data: a null or truncated string")
            strings.append(bytes(data[pos:pos + length - 1]).decode("utf-8"))
            pos += length - 1
        if pos + 2 != len(data) or data[pos + 1] != 0:
            raise PrincipalDeserializationError("principal data: unexpected bytes after the principal")
        return strings[0], strings[1], data[pos] != 0
    except PrincipalDeserializationError:
        raise
    except (MalformedMessage, struct.error, UnicodeDecodeError, IndexError, ValueError) as e:
        raise PrincipalDeserializationError(f"malformed principal data: {e!r}") from None


def address_bytes(host: str) -> bytes:
    return ipaddress.ip_address(host).packed


def address_from_bytes(data: bytes) -> str:
    if len(data) not in (4, 16):
        raise ValueError(f"a client address of {len(data)} bytes")
    return str(ipaddress.ip_address(bytes(data)))
