"""Dynamic broker configs, client quotas, ACLs and SCRAM credentials of a KRaft broker, from the metadata image
(Kafka 3.9's DynamicConfigPublisher, DynamicClientQuotaPublisher, AclPublisher and ScramPublisher).

Contract: `sync_image_security(store, image, node_id)` (blocking: run it on the metadata thread) makes the
KRaft broker's local metadata store hold exactly what the image holds, in the znode layout the broker's consumers
of it already read (broker/config/dynamic_store.py, broker/security/quotas.py, credentials.py, acl_store.py):
- ConfigRecords of BROKER resources: "" (the cluster default) as `/config/brokers/<default>`, this broker's id as
  `/config/brokers/<id>` (other brokers' are not ours to apply, as Kafka's publisher skips them);
- ClientQuotaRecords of user / client-id entities as `/config/users/...` and `/config/clients/...` (ip entities
  are not enforced by our quota manager and are skipped);
- UserScramCredentialRecords as the SCRAM-SHA-256/512 keys of `/config/users/<user>`;
- AccessControlEntryRecords as the ACL znodes of their resource patterns.
`changed_parts(previous, image, node_id)` names the parts a published image may have changed (none for a topic
config change), so only those are compared. Only what differs is written, each with its change notification,
so the watchers that feed the dynamic config, the quota manager and the authorizer apply it, and a SASL/SCRAM
login reads the credential from the store.
The store is thereby a copy of the image, rewritten in full at the first publish after a start (what it held
before is replaced); in KRaft mode nothing else writes these parts of it: the admin requests that change them
are sent to the controller (broker/kraft/admin.py) and come back through the metadata log.
"""

from __future__ import annotations

import logging
from typing import Any

from broker.config.dynamic_store import DEFAULT_ENTITY, BrokerConfigStore, write_entity_config
from broker.kraft.image import MetadataImage
from broker.security.acl import (
    AccessControlEntry,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    code_of,
)
from broker.security.acl_store import AclStore
from broker.security.credentials import CredentialStore
from broker.security.quotas import DEFAULT, Entity, QuotaStore
from broker.security.scram import ScramCredential

log = logging.getLogger("broker.kraft")

CONFIG_RESOURCE_BROKER = 4
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # Kafka's ScramMechanism type codes
ALL_PARTS = frozenset({"configs", "quotas", "scram", "acls"})


def quota_entity(entity: tuple[tuple[str, str | None], ...]) -> Entity | None:
    """The (user, client id) of an image's quota entity (None: an ip entity, or empty)."""
    parts = dict(entity)
    if not parts or set(parts) - {"user", "client-id"}:
        return None

    def name(kind: str) -> str | None:
        if kind not in parts:
            return None
        value = parts[kind]
        return DEFAULT if value is None else value
    return name("user"), name("client-id")


def image_quotas(image: MetadataImage) -> dict[Entity, dict[str, float]]:
    out: dict[Entity, dict[str, float]] = {}
    for entity, values in image.client_quotas.items():
        ours = quota_entity(entity)
        if ours is not None and values:
            out[ours] = {k: float(v) for k, v in values.items()}
    return out


def image_credentials(image: MetadataImage) -> dict[str, dict[str, ScramCredential]]:
    out: dict[str, dict[str, ScramCredential]] = {}
    for (mechanism, user), c in image.scram.items():
        name = SCRAM_MECHANISMS.get(mechanism)
        if name is not None:
            out.setdefault(user, {})[name] = ScramCredential(c.salt, c.stored_key, c.server_key, c.iterations)
    return out


def image_acls(image: MetadataImage) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
    out: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for a in image.acls.values():
        pattern = ResourcePattern(code_of(ResourceType, a.resource_type), a.resource_name,
                                  code_of(PatternType, a.pattern_type))
        out.setdefault(pattern, set()).add(AccessControlEntry(a.principal, a.host, code_of(AclOperation, a.operation),
                                                              code_of(PermissionType, a.permission_type)))
    return {p: frozenset(e) for p, e in out.items()}


def image_broker_configs(image: MetadataImage, node_id: int) -> dict[str, dict[str, str]]:
    return {DEFAULT_ENTITY: dict(image.configs.config(CONFIG_RESOURCE_BROKER, "")),
            str(node_id): dict(image.configs.config(CONFIG_RESOURCE_BROKER, str(node_id)))}


def sync_image_security(store: Any, image: MetadataImage, node_id: int, with_acls: bool = True,
                        parts: frozenset[str] = ALL_PARTS) -> None:
    """Make the store hold the image's `parts` (all by default: what `changed_parts` names after a start)."""
    tree = store._tree
    if "configs" in parts:
        configs = BrokerConfigStore(store, dispatch=lambda fn: None)
        for entity, props in image_broker_configs(image, node_id).items():
            if configs.read(entity) != props:
                write_entity_config(tree, "brokers", entity, props)
                log.info("dynamic config of %s from the metadata log", entity)
    if "quotas" in parts:
        _sync_quotas(store, image)
    if "scram" in parts:
        _sync_credentials(store, image)
    if with_acls and "acls" in parts:
        _sync_acls(store, image)


def _sync_quotas(store: Any, image: MetadataImage) -> None:
    quotas = QuotaStore(store)
    current_quotas = quotas.read_all()
    wanted_quotas = image_quotas(image)
    for entity in set(current_quotas) | set(wanted_quotas):
        have, want = current_quotas.get(entity, {}), wanted_quotas.get(entity, {})
        if have != want:
            quotas.alter(entity, want, [k for k in have if k not in want])


def _sync_credentials(store: Any, image: MetadataImage) -> None:
    credentials = CredentialStore(store)
    wanted_credentials = image_credentials(image)
    for user in set(credentials.users()) | set(wanted_credentials):
        have_c, want_c = credentials.mechanisms(user), wanted_credentials.get(user, {})
        if have_c != want_c:
            credentials.alter(user, want_c, [m for m in have_c if m not in want_c])


def _sync_acls(store: Any, image: MetadataImage) -> None:
    acls = AclStore(store, dispatch=lambda fn: None)
    current_acls = acls.load_all()
    wanted_acls = image_acls(image)
    for pattern in set(current_acls) | set(wanted_acls):
        want_a = wanted_acls.get(pattern, frozenset())
        if current_acls.get(pattern, frozenset()) != want_a:
            acls.update(pattern, lambda _current, want_a=want_a: want_a)


def changed_parts(previous: MetadataImage | None, image: MetadataImage, node_id: int) -> frozenset[str]:
    """Which of the parts the store copies the image may have changed (all of them for the first image); topic
    config changes alone name none."""
    if previous is None:
        return ALL_PARTS
    parts = set()
    if previous.configs is not image.configs and \
            image_broker_configs(previous, node_id) != image_broker_configs(image, node_id):
        parts.add("configs")
    if previous.client_quotas is not image.client_quotas:
        parts.add("quotas")
    if previous.scram is not image.scram:
        parts.add("scram")
    if previous.acls is not image.acls:
        parts.add("acls")
    return frozenset(parts)
