"""SCRAM (RFC 5802/7677) as Kafka's SCRAM-SHA-256 and SCRAM-SHA-512: credentials, their stored form, the
server's exchange and the client's (for the broker's own inter-broker connections).

Contract:
- `ScramCredential` is what the metadata store keeps per user and mechanism, as Kafka's
  ScramCredentialUtils writes it: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``
  (`to_text` / `from_text`, the latter raising ValueError on anything else).
- `credential_from_salted_password` is what AlterUserScramCredentials stores (the client sends the salt and
  the salted password, never the password); `credential_from_password` also runs PBKDF2 first.
- `ScramServer(mechanism, lookup)`: `await evaluate(token)` twice — client-first (returns server-first),
  client-final (returns server-final, then `complete` and `username` are set). Every failure raises
  `ScramError`; the caller answers Kafka's one generic message whatever the cause (unknown user, bad proof,
  too few iterations, malformed message), so a client cannot tell a wrong password from an unknown user.
- `ScramClient(mechanism, username, password)`: `first()`, `final(server_first)`, `verify(server_final)`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's ScramMechanism: the iteration counts a credential may have.
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
# Kafka's ScramMechanism type numbers (DescribeUserScramCredentials / AlterUserScramCredentials).
MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


class ScramError(Exception):
    pass


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def to_text(self) -> str:
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        props: dict[str, str] = {}
        for token in text.split(","):
            key, eq, value = token.partition("=")
            if not eq or not key:
                raise ValueError("Credentials not valid")
            props[key] = value
        if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
            raise ValueError("Credentials not valid")
        try:
            return cls(base64.b64decode(props["salt"], validate=True),
                       base64.b64decode(props["stored_key"], validate=True),
                       base64.b64decode(props["server_key"], validate=True), int(props["iterations"]))
        except ValueError:
            raise ValueError("Credentials not valid") from None


def _hmac(hash_name: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode(), salt, iterations)


def credential_from_salted_password(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    h = MECHANISMS[mechanism]
    client_key = _hmac(h, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(h, client_key).digest(), _hmac(h, salted, b"Server Key"), iterations)


def credential_from_password(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                             salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted_password(mechanism, salted_password(mechanism, password, salt, iterations),
                                           salt, iterations)


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, eq, value = part.partition("=")
        if not eq or len(key) != 1:
            raise ScramError("malformed SCRAM message")
        out.setdefault(key, value)
    return out


def _saslname(name: str) -> str:
    """RFC 5802 saslname: ',' and '=' travel as =2C and =3D; any other '=' is malformed."""
    if "=" in name.replace("=2C", "").replace("=3D", ""):
        raise ScramError("malformed user name")
    return name.replace("=2C", ",").replace("=3D", "=")


CredentialLookup = Callable[[str, str], Awaitable["ScramCredential | None"]]


class ScramServer:
    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        self.hash = MECHANISMS[mechanism]
        self._lookup = lookup
        self.username: str | None = None
        self.complete = False
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._client_first_bare = ""
        self._server_first = ""

    async def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode()
        except UnicodeDecodeError:
            raise ScramError("message is not UTF-8") from None
        if self._credential is None:
            return await self._client_first(message)
        return self._client_final(message)

    async def _client_first(self, message: str) -> bytes:
        gs2, sep, rest = message.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep or not sep2 or gs2 not in ("n", "y") or (authzid and not authzid.startswith("a=")):
            raise ScramError("malformed client-first message (channel binding is not supported)")
        attrs = _attributes(bare)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise ScramError("malformed client-first message")
        self.username = _saslname(attrs["n"])
        if authzid and _saslname(authzid[2:]) != self.username:
            raise ScramError("authorization id differs from the user name")
        credential = await self._lookup(self.username, self.mechanism)
        if credential is None:
            raise ScramError("unknown user")
        if credential.iterations < MIN_ITERATIONS:
            raise ScramError("too few iterations")
        self._credential = credential
        self._client_first_bare = bare
        self._nonce = attrs["r"] + secrets.token_urlsafe(24)
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        assert self._credential is not None
        if self.complete:
            raise ScramError("unexpected message after the exchange completed")
        without_proof, sep, proof_text = message.rpartition(",p=")
        if not sep:
            raise ScramError("client-final message without a proof")
        attrs = _attributes(without_proof)
        if "r" not in attrs or "c" not in attrs:
            raise ScramError("malformed client-final message")
        # As Kafka's ScramSaslServer, the nonce is not compared on its own: the proof covers the server-first
        # message (with our fresh nonce) and this message as sent. librdkafka 2.0 (kcat on Debian) repeats the
        # client nonce here, and Kafka accepts it.
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise ScramError("malformed proof") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.hash, self._credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("malformed proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), self._credential.stored_key):
            raise ScramError("invalid proof")
        self.complete = True
        server_signature = _hmac(self.hash, self._credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str) -> None:
        self.mechanism = mechanism
        self.hash = MECHANISMS[mechanism]
        self.username = username
        self.password = password
        self._nonce = secrets.token_urlsafe(24)
        self._client_first_bare = ""
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        name = self.username.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={name},r={self._nonce}"
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = _attributes(text)
        if not attrs.get("r", "").startswith(self._nonce):
            raise ScramError("server nonce does not extend ours")
        salt = base64.b64decode(attrs["s"])
        self._salted = salted_password(self.mechanism, self.password, salt, int(attrs["i"]))
        without_proof = f"c=biws,r={attrs['r']}"
        self._auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = _hmac(self.hash, self._salted, b"Client Key")
        signature = _hmac(self.hash, hashlib.new(self.hash, client_key).digest(), self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        expected = _hmac(self.hash, _hmac(self.hash, self._salted, b"Server Key"), self._auth_message)
        if server_final != b"v=" + base64.b64encode(expected):
            raise ScramError("server signature mismatch")
