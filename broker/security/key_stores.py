"""Kafka's key and trust store files in Java's formats, read into what Python's `ssl` loads.

Contract:
- `read_key_store(type, path, store_password, key_password)` returns the private key (PKCS#8 PEM, not
  encrypted: it only ever goes to a private temporary file that `ssl` reads and that is removed at once) and
  its certificate chain (PEM), from a PKCS12 store (`cryptography`) or a JKS store. As Kafka's
  DefaultSslEngineFactory, the key's password is `ssl.key.password`, else the store's password.
- `read_trust_store(type, path, password)` returns the trusted certificates (PEM): PKCS12 (its certificates),
  JKS (its trusted-certificate entries). A JKS store without a password is read without checking its integrity,
  as Java does; PKCS12 needs the password its MAC was made with.
- Any failure (wrong password, tampered file, a key entry that is not one) raises `KeyStoreError` with one
  sentence saying what, never the password.
- JKS is read here rather than with a library: the one there is (pyjks) has not been released since 2020,
  and the format is small — a header, entries (alias, date, Sun's KeyProtector-encrypted PKCS#8 key with its
  certificate chain, or a trusted certificate) and a SHA-1 of the password and the content.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from typing import Any

# `cryptography` is imported by the functions that parse keys and certificates, not here: its import costs ~30 ms
# (a fifth of a plain broker's start-up before issue 35) and only a broker with a PKCS12 or JKS store needs it.

_JKS_MAGIC = 0xFEEDFEED
_JKS_WHITENER = b"Mighty Aphrodite"  # fixed text Java's JKS mixes into the integrity digest
_KEY_PROTECTOR_OID = bytes.fromhex("2b060104012a02110101")  # 1.3.6.1.4.1.42.2.17.1.1, Sun's JKS KeyProtector
_PRIVATE_KEY_ENTRY, _TRUSTED_CERT_ENTRY = 1, 2


class KeyStoreError(Exception):
    pass


def read_key_store(store_type: str, path: str, store_password: str | None,
                   key_password: str | None) -> tuple[bytes, bytes]:
    serialization, pkcs12 = _serialization()
    data = _read(path)
    if store_type == "PKCS12":
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(data, _secret(key_password or store_password))
        except ValueError as e:
            raise KeyStoreError(f"cannot read the PKCS12 key store {path} (wrong password?): {e}") from None
        if key is None or cert is None:
            raise KeyStoreError(f"the PKCS12 key store {path} holds no private key with its certificate")
        chain = [cert, *extra]
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return key_pem, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    if store_type == "JKS":
        entries = _read_jks(data, path, store_password)
        keys = [e for e in entries if e[0] == _PRIVATE_KEY_ENTRY]
        if not keys:
            raise KeyStoreError(f"the JKS key store {path} holds no private key entry")
        _, protected, chain = keys[0]
        plain = _unprotect(protected, key_password or store_password or "", path)
        key = serialization.load_der_private_key(plain, None)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return key_pem, b"".join(_pem(der) for der in chain)
    raise KeyStoreError(f"key store type {store_type} is not supported (PEM, PKCS12 or JKS)")


def read_trust_store(store_type: str, path: str, password: str | None) -> str:
    serialization, pkcs12 = _serialization()
    data = _read(path)
    if store_type == "PKCS12":
        try:
            certs = pkcs12.load_pkcs12(data, _secret(password))
        except ValueError as e:
            raise KeyStoreError(f"cannot read the PKCS12 trust store {path} (wrong or missing "
                                f"ssl.truststore.password?): {e}") from None
        ders = [c.certificate.public_bytes(serialization.Encoding.DER) for c in certs.additional_certs]
        if certs.cert is not None:
            ders.append(certs.cert.certificate.public_bytes(serialization.Encoding.DER))
    elif store_type == "JKS":
        entries = _read_jks(data, path, password)
        ders = [e[1] for e in entries if e[0] == _TRUSTED_CERT_ENTRY]
    else:
        raise KeyStoreError(f"trust store type {store_type} is not supported (PEM, PKCS12 or JKS)")
    if not ders:
        raise KeyStoreError(f"the trust store {path} holds no certificate")
    return b"".join(_pem(der) for der in ders).decode()


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise KeyStoreError(f"cannot read {path}: {e.strerror}") from None


def _secret(password: str | None) -> bytes | None:
    return password.encode() if password else None


def _serialization() -> tuple[Any, Any]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    return serialization, pkcs12


def _pem(der: bytes) -> bytes:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    return x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM)


# ---- JKS --------------------------------------------------------------------------------------------------

def _read_jks(data: bytes, path: str, password: str | None) -> list[tuple]:
    """(1, protected key DER, [certificate DER...]) and (2, certificate DER) entries, integrity checked."""
    r = _Reader(data, path)
    if r.u32() != _JKS_MAGIC:
        raise KeyStoreError(f"{path} is not a JKS key store")
    version = r.u32()
    if version not in (1, 2):
        raise KeyStoreError(f"{path}: JKS version {version} is not supported")
    entries: list[tuple] = []
    for _ in range(r.u32()):
        tag = r.u32()
        r.utf()  # alias
        r.take(8)  # creation date
        if tag == _PRIVATE_KEY_ENTRY:
            protected = r.take(r.u32())
            chain = [_certificate(r, version) for _ in range(r.u32())]
            entries.append((tag, protected, chain))
        elif tag == _TRUSTED_CERT_ENTRY:
            entries.append((tag, _certificate(r, version)))
        else:
            raise KeyStoreError(f"{path}: entry type {tag} is not one a JKS store holds (a JCEKS store?)")
    body_end = r.pos
    digest = r.take(20)
    if password is not None:
        expected = hashlib.sha1(_utf16(password) + _JKS_WHITENER + data[:body_end]).digest()
        if not hmac.compare_digest(digest, expected):
            raise KeyStoreError(f"{path}: the JKS store's password is wrong or the file was tampered with")
    return entries


def _certificate(r: _Reader, version: int) -> bytes:
    if version == 2:
        kind = r.utf()
        if kind != "X.509":
            raise KeyStoreError(f"{r.path}: certificate type {kind} is not supported")
    return r.take(r.u32())


def _unprotect(protected: bytes, password: str, path: str) -> bytes:
    """Sun's KeyProtector: the key is XORed with a SHA-1 chain of the password and a salt, and checked by a
    SHA-1 of the password and the plain key."""
    outer = _der(protected, 0x30, path)
    algorithm = _der(outer, 0x30, path)
    if _der(algorithm, 0x06, path) != _KEY_PROTECTOR_OID:
        raise KeyStoreError(f"{path}: the private key is not protected the JKS way")
    blob = _der(outer[_der_length(outer, path):], 0x04, path)
    salt, encrypted, check = blob[:20], blob[20:-20], blob[-20:]
    secret = _utf16(password)
    stream = bytearray()
    digest = salt
    while len(stream) < len(encrypted):
        digest = hashlib.sha1(secret + digest).digest()
        stream += digest
    plain = bytes(a ^ b for a, b in zip(encrypted, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(secret + plain).digest(), check):
        raise KeyStoreError(f"{path}: the private key's password (ssl.key.password, else ssl.keystore.password) "
                            "is wrong")
    return plain


def _utf16(password: str) -> bytes:
    return password.encode("utf-16-be")


def _der(data: bytes, tag: int, path: str) -> bytes:
    """The content of the DER element at the start of `data`, which must carry `tag`."""
    if not data or data[0] != tag:
        raise KeyStoreError(f"{path}: malformed private key entry")
    start, length = _der_header(data, path)
    return data[start:start + length]


def _der_length(data: bytes, path: str) -> int:
    """The whole size of the DER element at the start of `data`."""
    start, length = _der_header(data, path)
    return start + length


def _der_header(data: bytes, path: str) -> tuple[int, int]:
    if len(data) < 2:
        raise KeyStoreError(f"{path}: malformed private key entry")
    first = data[1]
    if first < 0x80:
        return 2, first
    n = first & 0x7F
    if n == 0 or n > 4 or len(data) < 2 + n:
        raise KeyStoreError(f"{path}: malformed private key entry")
    return 2 + n, int.from_bytes(data[2:2 + n], "big")


class _Reader:
    def __init__(self, data: bytes, path: str) -> None:
        self.data, self.path, self.pos = data, path, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise KeyStoreError(f"{self.path}: the JKS store is truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return struct.unpack(">I", self.take(4))[0]

    def utf(self) -> str:
        # Java's modified UTF-8: the same as UTF-8 for the aliases and type names stores hold.
        return self.take(struct.unpack(">H", self.take(2))[0]).decode("utf-8", "replace")
