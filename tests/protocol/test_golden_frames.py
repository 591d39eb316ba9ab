"""Golden frames captured from stock clients decode, and re-encode to the very same bytes.

The fixtures under tests/fixtures/frames/<client>/ were recorded once by `recording_broker.py`
(kafka-python, confluent-kafka/librdkafka, aiokafka, kcat). A live capture also runs each client against
the recording broker, so a client upgrade that sends something new is caught too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from protocol import ApiKey, decode_request, encode_request
from tests.protocol.recording_broker import CLIENTS, FIXTURES, capture, fixture_name

GOLDEN = sorted(FIXTURES.glob('*/*.bin'))


def test_fixtures_cover_every_client_and_the_produce_path() -> None:
    clients = {path.parent.name for path in GOLDEN}
    assert {'kafka-python', 'confluent-kafka', 'aiokafka', 'kcat'} <= clients
    apis = {path.name.rsplit('_v', 1)[0] for path in GOLDEN}
    assert {'api_versions', 'metadata', 'produce', 'fetch', 'list_offsets', 'init_producer_id',
            'find_coordinator'} <= apis


@pytest.mark.parametrize('path', GOLDEN, ids=[f'{p.parent.name}/{p.name}' for p in GOLDEN])
def test_golden_frame_round_trips(path: Path) -> None:
    frame = path.read_bytes()
    request = decode_request(bytearray(frame))
    assert f'{ApiKey(request.API_KEY).name.lower()}_v{request.API_VERSION}.bin' == path.name
    assert request.header.client_id is not None and request.header.client_id.startswith('golden')
    assert encode_request(request) == frame
    if request.API_KEY == ApiKey.PRODUCE:
        records = request.topic_data[0].partition_data[0].records
        assert isinstance(records, memoryview) and len(records) > 61  # one v2 batch at least
        assert records[16] == 2  # magic byte of a v2 record batch


@pytest.mark.timeout(60)
@pytest.mark.parametrize('client', sorted(CLIENTS))
def test_live_capture_round_trips(client: str) -> None:
    if client.startswith('kcat') and shutil.which('kcat') is None:
        pytest.fail('kcat is required (Debian package kcat)')
    frames = capture(client)
    names = {fixture_name(frame) for frame in frames}
    assert any(name.startswith('api_versions') for name in names)
    for frame in frames:
        assert encode_request(decode_request(frame)) == frame
