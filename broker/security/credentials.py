"""SCRAM credentials in the metadata store, in Kafka's ZooKeeper layout.

Contract:
- `/config/users/<sanitized user>` holds ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,
  server_key=...,iterations=4096",...}}`` as Kafka's AdminZkClient writes it (other keys there, such as a
  user's quotas, are kept untouched); every write is followed by a ``/config/changes/config_change_<seq>``
  notification ``users/<sanitized user>``, so Kafka brokers sharing the ZooKeeper see it too.
- User names are sanitized as Kafka's Sanitizer does (URL-encoding, `*` as %2A, `~` as %7E).
- Works on both engines of broker/metadata (ZooKeeper, the local single-node file): it uses the store's tree.
  All calls are blocking: run them on the controller's metadata thread (`Controller.call`).
- Credentials are read from the store at each authentication (no cache to go stale).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from broker.config.dynamic_store import write_entity_config
from broker.metadata import znodes
from broker.metadata.types import MetadataError
from broker.security.scram import MECHANISMS, ScramCredential

CONFIG_USERS = "/config/users"


def sanitize(user: str) -> str:
    return quote(user, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    return unquote(name)


class CredentialStore:
    def __init__(self, store: Any) -> None:
        self._tree = store._tree  # both engines implement the same znode tree

    def _read(self, user: str) -> dict[str, str]:
        path = f"{CONFIG_USERS}/{sanitize(user)}"
        node = self._tree.get(path)
        return {} if node is None else znodes.decode_topic_config(path, node[0])

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        try:
            text = self._read(user).get(mechanism)
        except MetadataError:
            return None
        if text is None:
            return None
        try:
            return ScramCredential.from_text(text)
        except ValueError:
            return None

    def mechanisms(self, user: str) -> dict[str, ScramCredential]:
        out = {}
        for mechanism, text in self._read(user).items():
            if mechanism in MECHANISMS:
                try:
                    out[mechanism] = ScramCredential.from_text(text)
                except ValueError:
                    continue
        return out

    def users(self) -> list[str]:
        return sorted(desanitize(c) for c in self._tree.children(CONFIG_USERS) or [])

    def alter(self, user: str, upserts: Mapping[str, ScramCredential], deletions: list[str]) -> None:
        config = self._read(user)
        for mechanism in deletions:
            config.pop(mechanism, None)
        for mechanism, credential in upserts.items():
            config[mechanism] = credential.to_text()
        write_entity_config(self._tree, "users", sanitize(user), config)
