"""Why a SASL exchange failed, shared by the mechanisms (broker.security.sasl) and the
authenticator (broker.apis.sasl_authenticator)."""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """`message` goes to the client (Kafka's text); `user` is for the log line only."""

    def __init__(self, message: str, user: str | None) -> None:
        super().__init__(message)
        self.user = user


class InvalidSaslMessage(Exception):
    """The client's message does not parse: the client is told only Kafka's generic text (a SaslException)."""
