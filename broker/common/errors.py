"""Errors the broker's domain objects raise, each carrying the Kafka error code the client receives."""

from __future__ import annotations

from protocol.errors import ErrorCode


class KafkaApiError(Exception):
    """A request-level or partition-level failure with a Kafka error code and a message for the log."""

    code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, code: ErrorCode | int | None = None, message: str = "",
                 record_errors: list[tuple[int, str | None]] | None = None) -> None:
        if code is not None:
            self.code = ErrorCode(code)
        # KIP-467: the records of a rejected batch that failed a per-record check (index, message).
        self.record_errors: list[tuple[int, str | None]] = record_errors or []
        super().__init__(message or self.code.name)

    @property
    def message(self) -> str:
        return str(self)

