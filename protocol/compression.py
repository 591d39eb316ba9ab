"""Kafka's record compression codecs, re-exported from the shared ``records.compression`` (see its contract)."""

from records.compression import (
    Compression,
    compress,
    decompress,
    lz4_frame_compress,
    lz4_frame_decompress,
    snappy_decompress,
    snappy_xerial_compress,
    xxh32,
)
from records.errors import CorruptRecordError, InvalidRecordError

__all__ = [
    "Compression",
    "CorruptRecordError",
    "InvalidRecordError",
    "compress",
    "decompress",
    "lz4_frame_compress",
    "lz4_frame_decompress",
    "snappy_decompress",
    "snappy_xerial_compress",
    "xxh32",
]
