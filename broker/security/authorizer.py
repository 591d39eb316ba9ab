"""The ACL authorizer: Kafka's AclAuthorizer decisions over an in-memory cache of the stored ACLs.

Contract:
- `authorize(principal, host, operation, resource_type, name)`: a super user (`super.users`) is allowed
  everything. Otherwise the ACLs that apply to the resource are those on its literal name, on the literal
  wildcard `*` of its type, and on every prefixed pattern its name starts with. If there are none, the
  answer is `allow.everyone.if.no.acl.found`. Else a DENY for (the principal or `User:*`, the host or `*`,
  the operation or ALL) refuses, whatever else allows; failing that, an ALLOW for the same principals and
  hosts with the operation, ALL, or an operation implying it (READ/WRITE/DELETE/ALTER imply DESCRIBE,
  ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows; nothing else does.
- `authorize_by_resource_type(principal, host, operation, resource_type)`: may the principal do the
  operation on at least one resource of the type (Kafka's authorizeByResourceType: the idempotent producer
  without IDEMPOTENT_WRITE on the cluster).
- The cache changes only through `set_acls(pattern, entries)` (the store calls it after loading or reloading
  a resource) and is read without locks: everything runs on the broker's event loop.
- `create_acls` / `delete_acls` (coroutines, on the event loop) compute per resource pattern the new entry
  set, write it through the `AclStore` in a worker thread (a version-guarded update of the znode, then a
  change notification for every broker), and then update the cache.
No sockets here: the request context passes the principal and the client's address.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.security.acl import (
    IMPLIED_BY,
    SUPPORTED_OPERATIONS,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from broker.security.acl_store import AclStore

log = logging.getLogger(__name__)

# Kafka's ZooKeeper-mode ACL authorizer; naming it turns ours on (any other class is refused at start-up).
AUTHORIZER_CLASS_NAMES = frozenset({"kafka.security.authorizer.AclAuthorizer"})


class AclError(Exception):
    """An ACL that cannot be created or deleted; `invalid` marks Kafka's InvalidRequestException."""

    def __init__(self, message: str, invalid: bool = True) -> None:
        super().__init__(message)
        self.invalid = invalid


@dataclass(frozen=True, slots=True)
class DeleteResult:
    binding: AclBinding
    error: AclError | None = None


def from_config(config: Any) -> AclAuthorizer | None:
    """The authorizer `authorizer.class.name` asks for, or None (empty: every request is allowed)."""
    class_name = (config.get("authorizer.class.name") or "").strip()
    if not class_name:
        return None
    if class_name not in AUTHORIZER_CLASS_NAMES:
        raise ValueError(f"authorizer.class.name {class_name!r}: only Kafka's ACL authorizer is available "
                         f"({', '.join(sorted(AUTHORIZER_CLASS_NAMES))})")
    allow = config.originals.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true"
    return AclAuthorizer(parse_super_users(config.originals.get("super.users")), allow)


def parse_super_users(value: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (Kafka's format, "User:alice;User:bob")."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


class AclAuthorizer:
    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.store: AclStore | None = None  # set by `startup`
        # pattern -> its entries; per resource type, literal and prefixed patterns by name for lookups.
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        self._literal: dict[ResourceType, dict[str, frozenset[AccessControlEntry]]] = {}
        self._prefixed: dict[ResourceType, dict[str, frozenset[AccessControlEntry]]] = {}

    async def startup(self, metadata_store: Any) -> None:
        """Watch the change notifications, then load every stored ACL (Kafka's AclAuthorizer.configure)."""
        store = AclStore(metadata_store, asyncio.get_running_loop().call_soon_threadsafe)
        await asyncio.to_thread(store.create_paths)
        store.watch(self.set_acls)
        for pattern, entries in (await asyncio.to_thread(store.load_all)).items():
            self.set_acls(pattern, entries)
        self.store = store
        log.info("ACL authorizer started: %d resource patterns, super users %s, allow.everyone.if.no.acl.found=%s",
                 len(self._acls), sorted(self.super_users) or "none", self.allow_everyone_if_no_acl_found)

    def shutdown(self) -> None:
        if self.store is not None:
            self.store.close()

    # ------------------------------------------------------------------ the cache
    def set_acls(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        entries = frozenset(entries)
        index = (self._literal if pattern.pattern_type == PatternType.LITERAL else self._prefixed)
        by_name = index.setdefault(pattern.resource_type, {})
        if entries:
            self._acls[pattern] = entries
            by_name[pattern.name] = entries
        else:
            self._acls.pop(pattern, None)
            by_name.pop(pattern.name, None)

    def current(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        return self._acls.get(pattern, frozenset())

    def patterns(self) -> list[ResourcePattern]:
        return list(self._acls)

    def _matching(self, resource_type: ResourceType, name: str) -> list[frozenset[AccessControlEntry]]:
        found = []
        literal = self._literal.get(resource_type)
        if literal:
            for key in (name, WILDCARD_RESOURCE):
                entries = literal.get(key)
                if entries:
                    found.append(entries)
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            if len(prefixed) < len(name):
                found.extend(entries for prefix, entries in prefixed.items() if name.startswith(prefix))
            else:
                found.extend(entries for i in range(1, len(name) + 1) if (entries := prefixed.get(name[:i])))
        return found

    # ------------------------------------------------------------------ decisions
    def is_super_user(self, principal: str) -> bool:
        return principal in self.super_users

    def authorize(self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType,
                  name: str) -> bool:
        if principal in self.super_users:
            return True
        matching = self._matching(resource_type, name)
        if not matching:
            return self.allow_everyone_if_no_acl_found
        allowed = False
        grants = IMPLIED_BY.get(operation, (operation,))
        for entries in matching:
            for e in entries:
                if ((e.principal != principal and e.principal != WILDCARD_PRINCIPAL)
                        or (e.host != host and e.host != WILDCARD_HOST)):
                    continue
                if e.permission_type == PermissionType.DENY:
                    if e.operation == operation or e.operation == AclOperation.ALL:
                        return False
                elif e.operation in grants or e.operation == AclOperation.ALL:
                    allowed = True
        return allowed

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> set[int]:
        """The supported operations of the resource the principal may do (Metadata, DescribeGroups,
        DescribeCluster `authorized_operations`)."""
        return {int(op) for op in SUPPORTED_OPERATIONS[resource_type]
                if self.authorize(principal, host, op, resource_type, name)}

    def authorize_by_resource_type(self, principal: str, host: str, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        if principal in self.super_users:
            return True
        names: dict[tuple[PermissionType, PatternType], set[str]] = {}
        for pattern, entries in self._acls.items():
            if pattern.resource_type != resource_type:
                continue
            for e in entries:
                if ((e.principal in (principal, WILDCARD_PRINCIPAL)) and e.host in (host, WILDCARD_HOST)
                        and e.operation in (operation, AclOperation.ALL)):
                    names.setdefault((e.permission_type, pattern.pattern_type), set()).add(pattern.name)
        deny_literal = names.get((PermissionType.DENY, PatternType.LITERAL), set())
        deny_prefixed = names.get((PermissionType.DENY, PatternType.PREFIXED), set())
        if WILDCARD_RESOURCE in deny_literal:
            return False
        if self.allow_everyone_if_no_acl_found:
            return True

        def denied_by_prefix(name: str) -> bool:
            return any(name[:i] in deny_prefixed for i in range(1, len(name) + 1))

        for prefix in names.get((PermissionType.ALLOW, PatternType.PREFIXED), ()):
            if not denied_by_prefix(prefix):
                return True
        for literal in names.get((PermissionType.ALLOW, PatternType.LITERAL), ()):
            if literal == WILDCARD_RESOURCE or (literal not in deny_literal and not denied_by_prefix(literal)):
                return True
        return False

    # ------------------------------------------------------------------ administration
    def acls(self, flt: AclBindingFilter) -> list[AclBinding]:
        out = []
        for pattern in sorted(self._acls):
            if flt.matches_pattern(pattern):
                out.extend(AclBinding(pattern, e) for e in sorted(self._acls[pattern]) if flt.matches_entry(e))
        return out

    def count_new(self, bindings: Iterable[AclBinding]) -> int:
        """How many distinct valid ACLs of `bindings` are not stored yet: the records Kafka's controller would write
        for them (broker.controller.limits)."""
        return len({b for b in bindings if _invalid_binding(b) is None and b.entry not in self.current(b.pattern)})

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        """Store each binding. Per binding: None, or why it was refused."""
        results, changed = await asyncio.to_thread(self._create, bindings)
        for pattern, entries in changed.items():
            self.set_acls(pattern, entries)
        return results

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[list[DeleteResult]]:
        """Delete what each filter matches. An ACL two filters match is reported by the first."""
        results, changed = await asyncio.to_thread(self._delete, filters, list(self._acls))
        for pattern, entries in changed.items():
            self.set_acls(pattern, entries)
        return results

    def _create(self, bindings: Sequence[AclBinding]
                ) -> tuple[list[AclError | None], dict[ResourcePattern, frozenset[AccessControlEntry]]]:
        changed: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        results: list[AclError | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            error = _invalid_binding(binding)
            if error is not None:
                results[i] = AclError(f"Failed to create ACL: {error}")
            else:
                by_pattern.setdefault(binding.pattern, []).append(i)
        for pattern, indexes in by_pattern.items():
            added = {bindings[i].entry for i in indexes}
            try:
                changed[pattern] = self._store().update(pattern, lambda current, added=added: current | added)
            except Exception as e:  # a store failure answers UNKNOWN_SERVER_ERROR for these bindings
                log.exception("storing ACLs of %s failed", pattern)
                for i in indexes:
                    results[i] = AclError(str(e), invalid=False)
        return results, changed

    def _delete(self, filters: Sequence[AclBindingFilter], cached: list[ResourcePattern]
                ) -> tuple[list[list[DeleteResult]], dict[ResourcePattern, frozenset[AccessControlEntry]]]:
        changed: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        candidates = set(cached) | {p for f in filters if (p := f.exact_pattern()) is not None}
        reported: dict[AclBinding, int] = {}
        errors: dict[AclBinding, AclError] = {}
        for pattern in sorted(candidates):
            matching = [(i, f) for i, f in enumerate(filters) if f.matches_pattern(pattern)]
            if not matching:
                continue
            removed: list[AclBinding] = []

            def remove(current: frozenset[AccessControlEntry], pattern: ResourcePattern = pattern,
                       matching: list[tuple[int, AclBindingFilter]] = matching,
                       removed: list[AclBinding] = removed) -> frozenset[AccessControlEntry]:
                removed.clear()
                kept = set()
                for entry in current:
                    hit = next((i for i, f in matching if f.matches_entry(entry)), None)
                    if hit is None:
                        kept.add(entry)
                    else:
                        binding = AclBinding(pattern, entry)
                        removed.append(binding)
                        reported.setdefault(binding, hit)
                return frozenset(kept)

            try:
                changed[pattern] = self._store().update(pattern, remove)
            except Exception as e:
                log.exception("deleting ACLs of %s failed", pattern)
                for binding in removed:
                    errors.setdefault(binding, AclError(str(e), invalid=False))
        results: list[list[DeleteResult]] = [[] for _ in filters]
        for binding, index in sorted(reported.items(), key=lambda kv: (kv[0].pattern, kv[0].entry)):
            results[index].append(DeleteResult(binding, errors.get(binding)))
        return results, changed

    def _store(self) -> AclStore:
        if self.store is None:
            raise RuntimeError("the authorizer has no ACL store")
        return self.store


def _invalid_binding(binding: AclBinding) -> str | None:
    pattern, entry = binding.pattern, binding.entry
    if binding.is_unknown():
        return "ACL binding contains unknown elements"
    if pattern.resource_type == ResourceType.ANY or pattern.pattern_type in (PatternType.ANY, PatternType.MATCH) \
            or entry.operation == AclOperation.ANY or entry.permission_type == PermissionType.ANY:
        return "ACL binding contains ANY or MATCH elements, valid only in filters"
    if "/" in pattern.name:
        return f"ACL binding contains invalid resource name: {pattern.name}"
    if ":" not in entry.principal:
        return f"expected a string in format principalType:principalName but got {entry.principal}"
    return None
