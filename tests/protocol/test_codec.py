"""The codec's contract at its edges: frame sizes, headers, typed errors, ApiVersions, zero-copy records."""

from __future__ import annotations

import struct

import pytest

from protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    ErrorCode,
    InvalidFrameSize,
    MalformedMessage,
    ProtocolError,
    RecordsRef,
    UnknownApiKey,
    UnsupportedVersion,
    api_versions_fallback_response,
    api_versions_response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_parts,
    read_frame_size,
    request_class,
    response_class,
)
from protocol.kafka_python_ext import uvarint_bytes
from protocol.messages import FetchResponse, ProduceRequest


def _produce(version: int = 9, records: bytes = b'\x00' * 70) -> bytes:
    topic = ProduceRequest.TopicProduceData
    req = ProduceRequest[version](
        transactional_id=None, acks=-1, timeout_ms=1000,
        topic_data=[topic(name='t', partition_data=[topic.PartitionProduceData(index=0, records=records)])])
    req.with_header(correlation_id=42, client_id='client-1')
    return encode_request(req)


# --- frame size -----------------------------------------------------------------------------------------

def test_read_frame_size_accepts_sizes_within_the_limit() -> None:
    assert read_frame_size(struct.pack('>i', 1), 100) == 1
    assert read_frame_size(struct.pack('>i', 100), 100) == 100


@pytest.mark.parametrize('size', [0, -1, -(2**31), 101, 2**31 - 1])
def test_read_frame_size_rejects_zero_negative_and_oversized(size: int) -> None:
    with pytest.raises(InvalidFrameSize):
        read_frame_size(struct.pack('>i', size), 100)


def test_read_frame_size_default_limit_is_socket_request_max_bytes() -> None:
    assert read_frame_size(struct.pack('>i', 100 * 1024 * 1024)) == 100 * 1024 * 1024
    with pytest.raises(InvalidFrameSize):
        read_frame_size(struct.pack('>i', 100 * 1024 * 1024 + 1))


def test_read_frame_size_needs_exactly_four_bytes() -> None:
    with pytest.raises(InvalidFrameSize):
        read_frame_size(b'\x00\x00\x01')


# --- headers --------------------------------------------------------------------------------------------

def test_request_header_fields_are_decoded() -> None:
    request = decode_request(_produce())
    assert (request.API_KEY, request.API_VERSION) == (ApiKey.PRODUCE, 9)
    header = request.header
    assert (header.request_api_key, header.request_api_version) == (0, 9)
    assert header.correlation_id == 42
    assert header.client_id == 'client-1'


def test_controlled_shutdown_v0_uses_header_v0_without_client_id() -> None:
    frame = struct.pack('>hhi', ApiKey.CONTROLLED_SHUTDOWN, 0, 9) + struct.pack('>i', 3)
    request = decode_request(frame)
    assert request.broker_id == 3
    assert request.header.correlation_id == 9
    assert request.header.client_id is None
    assert encode_request(request) == frame


def test_flexible_header_unknown_tags_survive_a_round_trip() -> None:
    frame = bytearray(_produce())
    # Header v2: key, version, correlation id, client_id (int16 length), then the tag section.
    tags_at = 8 + 2 + len('client-1')
    assert frame[tags_at] == 0
    frame[tags_at:tags_at + 1] = uvarint_bytes(1) + uvarint_bytes(5) + uvarint_bytes(2) + b'hi'
    request = decode_request(frame)
    assert request.header.unknown_tags == {'_5': b'hi'}
    assert encode_request(request) == bytes(frame)


def test_api_versions_response_header_is_always_v0() -> None:
    response = api_versions_response(api_version=3, correlation_id=77)
    frame = encode_response(response)
    # v3 body is flexible (compact array), yet no header tag byte follows the correlation id.
    assert frame[:4] == struct.pack('>i', 77)
    assert frame[4:6] == b'\x00\x00'  # error_code straight after the correlation id
    assert decode_response(frame, ApiKey.API_VERSIONS, 3).header.correlation_id == 77


def test_flexible_response_uses_header_v1() -> None:
    response = response_class(ApiKey.METADATA)[9](throttle_time_ms=0, brokers=[], cluster_id=None,
                                                 controller_id=1, topics=[])
    response.with_header(correlation_id=5)
    frame = encode_response(response)
    assert frame[:5] == struct.pack('>i', 5) + b'\x00'


# --- ApiVersions negotiation ----------------------------------------------------------------------------

def test_api_versions_advertises_exactly_the_supported_table() -> None:
    for version in range(0, 5):
        frame = encode_response(api_versions_response(api_version=version, correlation_id=1))
        decoded = decode_response(frame, ApiKey.API_VERSIONS, version)
        advertised = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys}
        assert advertised == SUPPORTED_VERSIONS
    for key, (low, high) in SUPPORTED_VERSIONS.items():
        # 0, except where Kafka removed an API's first versions: the share-group APIs start at v1 (Kafka 4.1)
        share_group_apis = {ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
                            ApiKey.SHARE_ACKNOWLEDGE}
        assert low == (1 if key in share_group_apis else 0)
        assert request_class(key).max_version >= high and response_class(key).max_version >= high


def test_unsupported_api_versions_request_gets_the_v0_fallback() -> None:
    # A client newer than us sends ApiVersions v9 (flexible header v2, body unknown to us).
    frame = struct.pack('>hhih', ApiKey.API_VERSIONS, 9, 1234, 3) + b'cli' + b'\x00' + b'\x05newer\x02x\x00'
    with pytest.raises(UnsupportedVersion) as caught:
        decode_request(frame)
    header = caught.value.header
    assert (header.request_api_key, header.request_api_version, header.correlation_id) == (18, 9, 1234)
    assert header.client_id == 'cli'
    fallback = api_versions_fallback_response(header)
    # Kafka (KIP-511): header v0, v0 body, UNSUPPORTED_VERSION, only ApiVersions' own range.
    assert fallback == struct.pack('>ihihhh', 1234, 35, 1, 18, 0, 5)
    decoded = decode_response(fallback, ApiKey.API_VERSIONS, 3)  # a v3 client reads it as v0
    assert decoded.API_VERSION == 0
    assert decoded.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [(18, 0, 5)]


def test_unsupported_version_of_other_api_carries_the_header() -> None:
    frame = struct.pack('>hhih', ApiKey.PRODUCE, 14, 8, 1) + b'c' + b'\x00rest'
    with pytest.raises(UnsupportedVersion) as caught:
        decode_request(frame)
    assert caught.value.header.correlation_id == 8


def test_unknown_api_key_carries_the_header() -> None:
    frame = struct.pack('>hhih', 999, 0, 3, -1)
    with pytest.raises(UnknownApiKey) as caught:
        decode_request(frame)
    assert caught.value.header.correlation_id == 3
    with pytest.raises(UnknownApiKey):
        decode_request(struct.pack('>hhih', ApiKey.DESCRIBE_DELEGATION_TOKEN, 0, 3, -1))  # Kafka's, not ours


# --- malformed input ------------------------------------------------------------------------------------

def test_every_truncation_of_a_valid_frame_is_a_protocol_error() -> None:
    frame = _produce(records=b'r' * 40)
    for cut in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode_request(frame[:cut])


def test_trailing_bytes_after_the_body_are_ignored_as_kafka_does() -> None:
    # librdkafka 2.16's Metadata v12 request for all topics carries 3 bytes after the body; Kafka answers it.
    frame = bytes.fromhex('0003000c00000003000772646b61666b610000000000010000')
    request = decode_request(frame)
    assert request.API_KEY == 3 and request.topics is None and request.header.correlation_id == 3
    assert decode_request(_produce() + b'\x00').API_KEY == 0


def test_declared_lengths_past_the_frame_are_rejected() -> None:
    frame = bytearray(_produce(version=3, records=b'r' * 10))
    # v3 layout: header(8 + 2 + 8) txn_id(2) acks(2) timeout(4) topics(4) name(2+1) partitions(4) index(4)
    records_length_at = 18 + 2 + 2 + 4 + 4 + 3 + 4 + 4
    assert struct.unpack_from('>i', frame, records_length_at)[0] == 10
    for bad in (11, 2**31 - 1):
        struct.pack_into('>i', frame, records_length_at, bad)
        with pytest.raises(MalformedMessage):
            decode_request(bytes(frame))
    topics_count_at = 18 + 2 + 2 + 4
    struct.pack_into('>i', frame, records_length_at, 10)
    for bad in (2**31 - 1, -5):
        struct.pack_into('>i', frame, topics_count_at, bad)
        with pytest.raises(ProtocolError):
            decode_request(bytes(frame))


def test_a_null_where_the_schema_forbids_one_is_refused_at_decode_naming_the_field() -> None:
    """As Kafka's generated readers: Produce v3's topic_data (-1), a topic name (-1), and Fetch v12's topics (compact
    0) are not nullable; the message names API, version and field, and the header (client id) is kept."""
    frame = bytearray(_produce(version=3, records=b'r' * 10))
    topics_count_at = 18 + 2 + 2 + 4
    null_topics = frame[:topics_count_at] + struct.pack('>i', -1)
    with pytest.raises(MalformedMessage, match='PRODUCE v3 request: non-nullable field topicData was serialized as '
                                               'null') as e:
        decode_request(null_topics)
    assert e.value.header.client_id == 'client-1'
    null_name = bytearray(frame)
    struct.pack_into('>h', null_name, topics_count_at + 4, -1)
    with pytest.raises(MalformedMessage, match='non-nullable field name was serialized as null'):
        decode_request(bytes(null_name))
    fetch = request_class(ApiKey.FETCH)[12](
        replica_id=-1, max_wait_ms=1, min_bytes=1, max_bytes=1, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[], forgotten_topics_data=[], rack_id='')
    fetch.with_header(correlation_id=1, client_id='c')
    body = bytearray(encode_request(fetch))
    topics_at = 8 + 2 + 1 + 1 + 4 * 4 + 1 + 4 + 4  # header v2, then replica..session_epoch
    assert body[topics_at] == 1  # compact empty array
    body[topics_at] = 0  # compact null
    with pytest.raises(MalformedMessage, match='FETCH v12 request: non-nullable field topics was serialized as null'):
        decode_request(bytes(body))


def test_a_null_where_the_schema_allows_one_still_decodes_as_none() -> None:
    metadata = request_class(ApiKey.METADATA)
    for version in (1, 9):
        request = metadata[version](topics=None, allow_auto_topic_creation=True)
        request.with_header(correlation_id=1, client_id='c')
        assert decode_request(encode_request(request)).topics is None
    v0 = metadata[0](topics=[])
    v0.with_header(correlation_id=1, client_id='c')
    frame = encode_request(v0)[:-4] + struct.pack('>i', -1)  # v0 has no null topics ("all topics" is v1+)
    with pytest.raises(MalformedMessage, match='non-nullable field topics'):
        decode_request(frame)


def test_a_string_past_the_frame_is_refused_naming_the_field() -> None:
    frame = bytearray(_produce(version=3, records=b'r' * 10))
    struct.pack_into('>h', frame, 18 + 2 + 2 + 4 + 4, 300)  # the topic name's length
    with pytest.raises(MalformedMessage, match='length of name is negative or past the end of the frame'):
        decode_request(bytes(frame))


def test_overlong_varint_is_rejected() -> None:
    header = struct.pack('>hhih', ApiKey.API_VERSIONS, 3, 1, 1) + b'c' + b'\x00'
    # ClientSoftwareName compact string whose length varint never ends within 5 bytes.
    with pytest.raises(MalformedMessage):
        decode_request(header + b'\xff\xff\xff\xff\xff\xff\x01')


def test_overlong_encoding_of_a_small_varint_is_rejected() -> None:
    header = struct.pack('>hhih', ApiKey.API_VERSIONS, 3, 1, 1) + b'c' + b'\x00'
    body_tail = b'ab' + b'\x02b' + b'\x00'
    assert decode_request(header + b'\x03' + body_tail).client_software_name == 'ab'
    with pytest.raises(MalformedMessage):
        decode_request(header + b'\x83\x80\x80\x80\x80\x00' + body_tail)  # 3, spelled in six bytes


def test_tagged_fields_must_be_in_ascending_order() -> None:
    header = struct.pack('>hhih', ApiKey.API_VERSIONS, 3, 1, 1) + b'c'
    body = b'\x02a\x02b'
    good = header + b'\x00' + body + b'\x02' + b'\x05\x01x' + b'\x07\x01y'
    assert decode_request(good).unknown_tags == {'_5': b'x', '_7': b'y'}
    assert encode_request(decode_request(good)) == good
    with pytest.raises(MalformedMessage):
        decode_request(header + b'\x00' + body + b'\x02' + b'\x07\x01y' + b'\x05\x01x')
    with pytest.raises(MalformedMessage):
        decode_request(header + b'\x00' + body + b'\x01' + b'\x05\x09x')  # tag size past the end


def test_non_utf8_client_id_is_malformed() -> None:
    with pytest.raises(MalformedMessage):
        decode_request(struct.pack('>hhih', ApiKey.API_VERSIONS, 0, 1, 2) + b'\xff\xfe')


# --- zero-copy records ----------------------------------------------------------------------------------

def test_produce_records_are_a_writable_view_into_a_bytearray_frame() -> None:
    frame = bytearray(_produce(records=b'\x00' * 61 + b'batch'))
    records = decode_request(frame).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and not records.readonly
    assert records.obj is frame
    records[0:8] = struct.pack('>q', 1234)  # the broker assigns the base offset in place
    assert bytes(frame).find(struct.pack('>q', 1234)) > 0


def test_produce_records_from_bytes_are_a_read_only_view() -> None:
    frame = _produce()
    records = decode_request(frame).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.readonly and records.obj is frame


def test_null_records_stay_null() -> None:
    request = decode_request(_produce(records=None))
    assert request.topic_data[0].partition_data[0].records is None


# --- zero-copy fetch responses --------------------------------------------------------------------------

def _fetch_response(version: int, records) -> FetchResponse:
    topic = FetchResponse.FetchableTopicResponse
    response = FetchResponse[version](
        throttle_time_ms=0, error_code=0, session_id=0,
        responses=[topic(topic='t', partitions=[
            topic.PartitionData(partition_index=p, error_code=0, high_watermark=9, last_stable_offset=9,
                                log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1,
                                records=records)
            for p in range(2)])])
    response.with_header(correlation_id=11)
    return response


@pytest.mark.parametrize('version', range(0, 18))
def test_encode_response_parts_keeps_records_refs_out_of_the_bytes(version: int) -> None:
    batch = b'B' * 5000
    ref = RecordsRef(length=len(batch), source=('segment', 0, len(batch)))
    total, parts = encode_response_parts(_fetch_response(version, ref))
    assert [p for p in parts if isinstance(p, RecordsRef)] == [ref, ref]
    assert total == sum(p.length if isinstance(p, RecordsRef) else len(p) for p in parts)
    # Substituting the referenced bytes gives exactly the frame the generic encoder writes.
    joined = b''.join(batch if isinstance(p, RecordsRef) else bytes(p) for p in parts)
    assert joined == encode_response(_fetch_response(version, batch))
    decoded = decode_response(joined, ApiKey.FETCH, version)
    assert bytes(decoded.responses[0].partitions[1].records) == batch


def test_encode_response_parts_of_other_responses_is_one_run() -> None:
    response = api_versions_response(api_version=2, correlation_id=3)
    total, parts = encode_response_parts(response)
    assert parts == [encode_response(response)] and total == len(parts[0])
