"""Mutations of a request frame, as issue 30's run made them.

`mutate(rng, frame, api_keys)` returns `(frame, declared)`: the bytes to send after the size prefix, and the size
the prefix declares, which is more than the bytes sent for a frame whose prefix promises more than comes (the
sender then closes the connection after it). One frame in twenty is sent unchanged, so the broker also keeps
doing real work between the hostile frames.
"""

from __future__ import annotations

import random
import struct

# Values that become counts, lengths and sizes at their worst: the largest, the negative, the wrapped.
EXTREME_INT32 = (0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x00010000, 0x000186A0, 0x3B9ACA00, 0x00FFFFFF)
EXTREME_INT16 = (0x7FFF, 0x8000, 0xFFFF, 0xFFFE, 0x0100, 0x2710)
MUTATIONS = ("bit_flip", "overwrite", "int32", "int16", "varint", "truncate", "tail", "version", "api_key",
             "short_prefix", "splice")


def mutate(rng: random.Random, frame: bytes, api_keys: tuple[int, ...]) -> tuple[bytes, int, str]:
    """One mutated frame: (bytes to send, size the prefix declares, the mutation's name)."""
    if rng.random() < 0.05:
        return frame, len(frame), "none"
    data = bytearray(frame)
    kind = rng.choice(MUTATIONS)
    n = len(data)
    if kind == "bit_flip":
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "overwrite":
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(n)] = rng.randrange(256)
    elif kind == "int32" and n > 12:
        struct.pack_into(">I", data, rng.randrange(8, n - 3), rng.choice(EXTREME_INT32))
    elif kind == "int16" and n > 10:
        struct.pack_into(">H", data, rng.randrange(8, n - 1), rng.choice(EXTREME_INT16))
    elif kind == "varint" and n > 9:
        # a compact length or count made huge: a run of continuation bytes, or one that ends far away
        at = rng.randrange(8, n)
        data[at:at + 1] = rng.choice((b"\xff\xff\xff\xff\x07", b"\xff\xff\x7f", b"\x80\x80\x80\x80\x80\x01"))
    elif kind == "truncate":
        del data[rng.randrange(n):]
    elif kind == "tail":
        data += rng.randbytes(rng.randint(1, 64))
    elif kind == "version":
        struct.pack_into(">h", data, 2, rng.choice((rng.randint(0, 20), -1, 0x7FFF)))
    elif kind == "api_key":
        struct.pack_into(">h", data, 0, rng.choice(api_keys) if rng.random() < 0.9 else rng.randint(-5, 200))
    elif kind == "short_prefix":
        return bytes(data), n + rng.choice((1, 7, 100, 4096, 1 << 20, 64 << 20)), kind
    else:  # splice: a part of the frame moved elsewhere
        a, b = sorted(rng.randrange(n + 1) for _ in range(2))
        data[a:b] = data[b:] + data[:a]
    return bytes(data), len(data), kind
