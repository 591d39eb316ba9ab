"""Legacy message sets (magic v0 and v1), re-exported from the shared codec's ``records.legacy`` (see its
contract): the broker up-converts v0-v2 produce data and down-converts fetch data for v0-v3 clients."""

from records.legacy import (
    LegacyMessage,
    UnsupportedCompressionTypeError,
    build_message_set,
    down_convert,
    iter_legacy_messages,
    up_convert,
)

__all__ = [
    "LegacyMessage",
    "UnsupportedCompressionTypeError",
    "build_message_set",
    "down_convert",
    "iter_legacy_messages",
    "up_convert",
]
