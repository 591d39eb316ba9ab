"""Fuzz `decode_request` with 200,000 random and mutated frames per run.

Only `ProtocolError` may escape, a frame that decodes must re-encode without error, and memory stays
bounded (resident set growth well under what unbounded allocations from declared lengths would take).
Deterministic seed, so a failure reproduces; about 5 s on the 2-core CI machine.
"""

from __future__ import annotations

import random
import resource
import struct
import time

from protocol import (
    SUPPORTED_VERSIONS,
    ProtocolError,
    decode_request,
    encode_request,
    request_class,
)
from tests.protocol.message_strategies import sample_message

FRAMES = 200_000
EXTREME_INT32 = (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x00010000, 0x7FFFFFFE)
EXTREME_INT16 = (0x7FFF, 0x8000, 0xFFFF, 0xFFFE)


def _seed_frames() -> list[bytes]:
    frames = []
    for key, (low, high) in sorted(SUPPORTED_VERSIONS.items()):
        for version in range(low, high + 1):
            message = sample_message(request_class(key), version)
            message.with_header(correlation_id=7, client_id='fuzz')
            frames.append(encode_request(message))
    return frames


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    kind = rng.randrange(8)
    if kind == 0:  # flip a few bytes
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == 1:  # truncate
        del data[rng.randrange(len(data)):]
    elif kind == 2:  # trailing garbage
        data += rng.randbytes(rng.randint(1, 16))
    elif kind == 3 and len(data) > 12:  # an extreme int32 where a length or count may be
        struct.pack_into('>I', data, rng.randrange(8, len(data) - 3), rng.choice(EXTREME_INT32))
    elif kind == 4 and len(data) > 10:  # an extreme int16 (string lengths, versions)
        struct.pack_into('>H', data, rng.randrange(0, len(data) - 1), rng.choice(EXTREME_INT16))
    elif kind == 5:  # a run of continuation bytes: a varint that never ends
        at = rng.randrange(8, len(data)) if len(data) > 8 else len(data)
        data[at:at] = b'\xff' * rng.randint(1, 12)
    elif kind == 6:  # splice two places of the frame
        a, b = sorted(rng.randrange(len(data) + 1) for _ in range(2))
        data[a:b] = data[b:] + data[:a]
    else:  # a valid header over random bytes
        data = data[:rng.randint(8, 20)] + rng.randbytes(rng.randint(0, 64))
    return bytes(data)


def test_decode_request_only_raises_protocol_error() -> None:
    rng = random.Random(20240611)
    seeds = _seed_frames()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    decoded = rejected = 0
    for i in range(FRAMES):
        if i % 10 == 0:
            frame = rng.randbytes(rng.randint(0, 48))  # wholly random
        else:
            frame = _mutate(rng, rng.choice(seeds))
        try:
            request = decode_request(frame)
        except ProtocolError:
            rejected += 1
            continue
        decoded += 1
        encode_request(request)  # whatever decodes must be encodable
    elapsed = time.monotonic() - started
    rss_growth_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert decoded + rejected == FRAMES
    assert rejected > FRAMES // 2 and decoded > 1000  # the mutations reach both outcomes
    assert rss_growth_kib < 64 * 1024, f'resident set grew by {rss_growth_kib} KiB'
    assert elapsed < 90, f'fuzz took {elapsed:.1f} s'


def test_huge_declared_lengths_do_not_allocate() -> None:
    # An array count, a string length and a bytes length of 2**31-1 in tiny frames.
    header = struct.pack('>hhih', 3, 1, 1, -1)  # Metadata v1, classic encodings
    tracemalloc_limit = 1 << 20
    import tracemalloc

    tracemalloc.start()
    try:
        for body in (struct.pack('>i', 0x7FFFFFFF), struct.pack('>ih', 1, 0x7FFF) + b'ab'):
            try:
                decode_request(header + body)
            except ProtocolError:
                pass
            else:
                raise AssertionError('accepted a frame with an impossible length')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < tracemalloc_limit
