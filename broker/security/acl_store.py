"""ACLs in the metadata store, in Kafka's ZooKeeper layout, so Kafka's brokers and tools and ours agree.

Layout (Kafka's ZkAclStore; resource types in PascalCase: Topic, Group, Cluster, TransactionalId,
DelegationToken, User):
  /kafka-acl/<ResourceType>/<name>                    literal patterns (and the wildcard `*`)
  /kafka-acl-extended/prefixed/<ResourceType>/<name>  prefixed patterns
    each {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read",
    "host":"*"}]}; a resource whose last ACL goes is deleted.
  /kafka-acl-changes/acl_changes_<seq>                after a literal pattern changed: "Topic:<name>"
                                                      (Kafka writes the enum's upper-case name, "TOPIC:<name>")
  /kafka-acl-extended-changes/acl_changes_<seq>       after any other: {"version":1,"resourceType":"TOPIC",
                                                      "name":"<name>","patternType":"PREFIXED"}
Contract:
- Blocking methods (call them off the event loop). `update(pattern, fn)` applies fn(current entries) with
  the znode version as the guard, retrying on a concurrent change, then writes the change notification.
- `load_all()` reads every stored pattern; `read(pattern)` one.
- `watch(callback)`: `callback(pattern)` through `dispatch` for each notification newer than the watch's
  start, from Kafka's brokers and tools as from ours.
Works on either engine of broker/metadata (ZooKeeper or the local file): it uses the store's znode tree.
Encoders and decoders are pure functions; znode contents are untrusted (`MetadataCorruptError`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from broker.metadata.notifications import SequentialNotifications
from broker.metadata.types import BadVersionError, MetadataCorruptError, NodeExistsError, NoNodeError
from broker.security.acl import (
    RESOURCE_TYPES,
    AccessControlEntry,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    from_name,
    name_of,
)

log = logging.getLogger(__name__)

LITERAL_ROOT = "/kafka-acl"
EXTENDED_ROOT = "/kafka-acl-extended"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"


def root_of(pattern_type: PatternType) -> str:
    if pattern_type == PatternType.LITERAL:
        return LITERAL_ROOT
    return f"{EXTENDED_ROOT}/{pattern_type.name.lower()}"


def resource_path(pattern: ResourcePattern) -> str:
    return f"{root_of(pattern.pattern_type)}/{name_of(pattern.resource_type)}/{pattern.name}"


def encode_acls(entries: frozenset[AccessControlEntry]) -> bytes:
    acls = [{"principal": e.principal, "permissionType": name_of(e.permission_type),
             "operation": name_of(e.operation), "host": e.host} for e in sorted(entries)]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":"), ensure_ascii=False).encode()


def decode_acls(path: str, data: bytes) -> frozenset[AccessControlEntry]:
    if not data:
        return frozenset()
    try:
        node = json.loads(data)
        if node.get("version") != 1:
            raise ValueError(f"version {node.get('version')!r}")
        return frozenset(AccessControlEntry(str(a["principal"]), str(a["host"]),
                                            from_name(AclOperation, a["operation"]),
                                            from_name(PermissionType, a["permissionType"]))
                         for a in node["acls"])
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise MetadataCorruptError(f"unreadable ACLs at {path}: {e}") from None


def encode_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    """(the changes folder, the notification's data) for a change of `pattern`."""
    if pattern.pattern_type == PatternType.LITERAL:
        return LITERAL_CHANGES, f"{pattern.resource_type.name}:{pattern.name}".encode()
    event = {"version": 1, "resourceType": pattern.resource_type.name, "name": pattern.name,
             "patternType": pattern.pattern_type.name}
    return EXTENDED_CHANGES, json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()


def decode_change(folder: str, data: bytes) -> ResourcePattern:
    try:
        if folder == LITERAL_CHANGES:
            kind, name = data.decode().split(":", 1)
            return ResourcePattern(_resource_type(kind), name, PatternType.LITERAL)
        event = json.loads(data)
        if event.get("version", 1) > 1:
            raise ValueError(f"version {event.get('version')}")
        return ResourcePattern(_resource_type(event["resourceType"]), str(event["name"]),
                               from_name(PatternType, str(event["patternType"]).upper()))
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as e:
        raise MetadataCorruptError(f"unreadable ACL change notification in {folder}: {e}") from None


def _resource_type(text: str) -> ResourceType:
    return from_name(ResourceType, text.upper() if text.upper() in ResourceType.__members__ else text)


class AclStore:
    def __init__(self, store: Any, dispatch: Callable[[Callable[[], None]], None]) -> None:
        self._tree = store._tree  # both engines (ZooKeeper, local file) implement the same znode tree
        self._dispatch = dispatch
        self._watchers: list[SequentialNotifications] = []

    def create_paths(self) -> None:
        """The folders Kafka's authorizer creates at start-up."""
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            for resource_type in RESOURCE_TYPES:
                self._tree.ensure_path(f"{root_of(pattern_type)}/{name_of(resource_type)}")
        self._tree.ensure_path(LITERAL_CHANGES)
        self._tree.ensure_path(EXTENDED_CHANGES)

    def read(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int]:
        """(entries, znode version); (empty, -1) when nothing is stored."""
        path = resource_path(pattern)
        node = self._tree.get(path)
        return (frozenset(), -1) if node is None else (decode_acls(path, node[0]), node[1])

    def load_all(self) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
        loaded: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            root = root_of(pattern_type)
            for type_name in self._tree.children(root) or []:
                try:
                    resource_type = from_name(ResourceType, type_name)
                except ValueError:
                    log.warning("ignoring ACLs of unknown resource type %s under %s", type_name, root)
                    continue
                for name in self._tree.children(f"{root}/{type_name}") or []:
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    try:
                        entries, _ = self.read(pattern)
                    except MetadataCorruptError as e:
                        log.error("%s", e)
                        continue
                    if entries:
                        loaded[pattern] = entries
        return loaded

    def update(self, pattern: ResourcePattern,
               change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]
               ) -> frozenset[AccessControlEntry]:
        """Apply `change` to the stored entries of `pattern`, guarded by the znode version; returns the
        new entries. A notification is written only when something changed."""
        path = resource_path(pattern)
        while True:
            current, version = self.read(pattern)
            new = frozenset(change(current))
            if new == current:
                return new
            try:
                if version < 0:
                    self._tree.create(path, encode_acls(new), makepath=True)
                elif new:
                    self._tree.set(path, encode_acls(new), version)
                else:
                    self._tree.delete(path, version)
                break
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker changed the resource meanwhile: apply the change to its state
        folder, data = encode_change(pattern)
        self._tree.create(f"{folder}/{CHANGE_PREFIX}", data, sequential=True, makepath=True)
        return new

    def watch(self, callback: Callable[[ResourcePattern, frozenset[AccessControlEntry]], None]) -> None:
        """`callback(pattern, its current entries)` on the event loop for each new notification."""
        for folder in (LITERAL_CHANGES, EXTENDED_CHANGES):
            def on_new(notifications: list[bytes], folder: str = folder) -> None:
                for data in notifications:
                    try:
                        pattern = decode_change(folder, data)
                        entries, _ = self.read(pattern)
                    except MetadataCorruptError as e:
                        log.error("%s", e)
                        continue
                    try:
                        self._dispatch(lambda p=pattern, e=entries: callback(p, e))
                    except RuntimeError:
                        return  # the event loop is closed: the broker is shutting down

            watcher = SequentialNotifications(self._tree, folder, CHANGE_PREFIX, on_new, "ACL changes")
            self._watchers.append(watcher)
            watcher.start()

    def close(self) -> None:
        for watcher in self._watchers:
            watcher.close()
