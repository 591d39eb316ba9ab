"""Envelope (KIP-590) pieces: the EnvelopeRequest/Response codec and DefaultKafkaPrincipalBuilder's principal
bytes, spelled out by hand from Kafka's layout (int16 version 0, then DefaultPrincipalData v0, flexible)."""

from __future__ import annotations

import pytest

from protocol import (
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_class,
    response_class,
)
from protocol.envelope import (
    PrincipalDeserializationError,
    address_bytes,
    address_from_bytes,
    deserialize_principal,
    serialize_principal,
)


def test_principal_bytes_by_hand() -> None:
    data = serialize_principal("User", "alice")
    assert data == b"\x00\x00" + b"\x05User" + b"\x06alice" + b"\x00" + b"\x00"
    assert deserialize_principal(data) == ("User", "alice", False)
    assert deserialize_principal(serialize_principal("User", "t", True)) == ("User", "t", True)
    assert deserialize_principal(serialize_principal("User", "ANONYMOUS")) == ("User", "ANONYMOUS", False)


@pytest.mark.parametrize("data", [
    b"", b"\x00", b"\x00\x01\x05User\x06alice\x00\x00", b"\x00\x00\x05User", b"\x00\x00\x00\x06alice\x00\x00",
    b"\x00\x00\x05User\x06alice\x00\x00\x00", b"\x00\x00\x05User\x06alice\x00\x01\x00\x00",
], ids=["empty", "short", "version-1", "truncated", "null-type", "trailing", "unknown-tags"])
def test_malformed_principal_bytes(data: bytes) -> None:
    with pytest.raises(PrincipalDeserializationError):
        deserialize_principal(data)


def test_client_addresses_as_java_inet_address() -> None:
    assert address_bytes("127.0.0.1") == b"\x7f\x00\x00\x01"
    assert address_from_bytes(address_bytes("::1")) == "::1" and len(address_bytes("::1")) == 16
    with pytest.raises(ValueError):
        address_from_bytes(b"\x01\x02")


def test_envelope_round_trip_carries_a_request_and_its_response() -> None:
    inner = request_class(ApiKey.DESCRIBE_CLUSTER)[0](include_cluster_authorized_operations=False)
    inner.with_header(correlation_id=7, client_id="adminclient-1")
    envelope = request_class(ApiKey.ENVELOPE)[0](request_data=encode_request(inner),
                                                 request_principal=serialize_principal("User", "bob"),
                                                 client_host_address=address_bytes("10.0.0.2"))
    envelope.with_header(correlation_id=1, client_id="broker-1")
    decoded = decode_request(bytearray(encode_request(envelope)))
    again = decode_request(bytearray(decoded.request_data))
    assert (again.API_KEY, again.header.correlation_id, again.header.client_id) == (
        ApiKey.DESCRIBE_CLUSTER, 7, "adminclient-1")
    assert deserialize_principal(bytes(decoded.request_principal))[1] == "bob"
    Resp = response_class(ApiKey.ENVELOPE)[0]
    out = Resp(response_data=b"\x00\x00\x00\x07", error_code=0)
    out.with_header(correlation_id=1)
    back = decode_response(encode_response(out), ApiKey.ENVELOPE, 0)
    assert bytes(back.response_data) == b"\x00\x00\x00\x07" and back.error_code == 0
