"""What every request handler gets and shares.

A handler module names its API (`API_KEY`), the versions it serves (`MIN_VERSION`, `MAX_VERSION`) and a
`handle(ctx, request)` returning the response object, `None` (no response: acks=0 produce) or an
awaitable of either. ApiVersions is derived from these modules, so it never claims a version nobody
implemented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol import response_class

if TYPE_CHECKING:
    from broker.network import Connection
    from broker.server import KafkaServer


@dataclass(slots=True)
class RequestContext:
    server: KafkaServer
    connection: Connection | None
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    @property
    def client_host(self) -> str:
        return self.connection.peer[0] if self.connection is not None else "127.0.0.1"


def response_for(request: Any, **fields: Any) -> Any:
    """The response message of `request`'s API at the request's version."""
    return response_class(request.API_KEY)[request.API_VERSION](**fields)


def response_type(request: Any) -> Any:
    """The response class (for its nested data classes, e.g. `.TopicProduceResponse`)."""
    return response_class(request.API_KEY)
