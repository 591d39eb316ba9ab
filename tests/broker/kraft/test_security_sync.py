"""broker/kraft/security_sync.py: the local store becomes a copy of the image's broker configs, client quotas,
SCRAM credentials and ACLs, whatever it held before (a restart's stale copy), with nothing rewritten when
nothing changed."""

from __future__ import annotations

import uuid
from pathlib import Path

from broker.config.dynamic_store import DEFAULT_ENTITY, BrokerConfigStore, write_entity_config
from broker.kraft.image import AclEntry, ConfigurationsImage, MetadataImage, ScramCredential
from broker.kraft.security_sync import image_quotas, quota_entity, sync_image_security
from broker.metadata.store import LocalMetadataStore
from broker.security.acl import AccessControlEntry, AclOperation, PatternType, PermissionType, ResourcePattern
from broker.security.acl import ResourceType as RT
from broker.security.acl_store import AclStore
from broker.security.credentials import CredentialStore
from broker.security.quotas import QuotaStore
from broker.security.scram import credential_from_password


def test_quota_entities_as_our_quota_manager_names_them() -> None:
    assert quota_entity((("client-id", "c"), ("user", None))) == ("<default>", "c")
    assert quota_entity((("user", "u"),)) == ("u", None)
    assert quota_entity((("ip", "1.2.3.4"),)) is None
    image = MetadataImage(client_quotas={(("client-id", None),): {"producer_byte_rate": 10.0},
                                         (("ip", None),): {"connection_creation_rate": 5.0}})
    assert image_quotas(image) == {(None, "<default>"): {"producer_byte_rate": 10.0}}


def test_the_store_becomes_a_copy_of_the_image(tmp_path: Path) -> None:
    store = LocalMetadataStore(tmp_path, dispatch=lambda fn: fn())
    try:
        stale = credential_from_password("SCRAM-SHA-256", "old", 4096)
        CredentialStore(store).alter("gone", {"SCRAM-SHA-256": stale}, [])
        QuotaStore(store).alter(("gone", None), {"producer_byte_rate": 1.0}, [])
        write_entity_config(store._tree, "brokers", DEFAULT_ENTITY, {"message.max.bytes": "1"})
        stale_pattern = ResourcePattern(RT.TOPIC, "old", PatternType.LITERAL)
        AclStore(store, lambda fn: None).update(stale_pattern, lambda _: frozenset({AccessControlEntry(
            "User:x", "*", AclOperation.READ, PermissionType.ALLOW)}))

        new = credential_from_password("SCRAM-SHA-512", "new", 8192)
        image = MetadataImage(
            configs=ConfigurationsImage({(4, ""): {"log.cleaner.threads": "2"}, (4, "7"): {"a": "b"},
                                         (4, "8"): {"not": "ours"}}),
            client_quotas={(("user", "alice"),): {"consumer_byte_rate": 5.0}},
            scram={(2, "alice"): ScramCredential(new.salt, new.stored_key, new.server_key, new.iterations)},
            acls={uuid.uuid4(): AclEntry(2, "t", 3, "User:alice", "*", 3, 3)})
        sync_image_security(store, image, 7)

        configs = BrokerConfigStore(store, lambda fn: None)
        assert configs.read(DEFAULT_ENTITY) == {"log.cleaner.threads": "2"} and configs.read("7") == {"a": "b"}
        assert configs.read("8") == {}
        assert QuotaStore(store).read_all() == {("alice", None): {"consumer_byte_rate": 5.0}}
        credentials = CredentialStore(store)
        assert credentials.mechanisms("gone") == {} and credentials.mechanisms("alice") == {"SCRAM-SHA-512": new}
        assert AclStore(store, lambda fn: None).load_all() == {
            ResourcePattern(RT.TOPIC, "t", PatternType.LITERAL): frozenset({AccessControlEntry(
                "User:alice", "*", AclOperation.READ, PermissionType.ALLOW)})}
        # The same image again writes nothing (no change notifications).
        before = sorted(store._tree.children("/config/changes") or [])
        sync_image_security(store, image, 7)
        assert sorted(store._tree.children("/config/changes") or []) == before
    finally:
        store.close()


def test_changed_parts() -> None:
    from dataclasses import replace

    from broker.kraft.security_sync import ALL_PARTS, changed_parts

    base = MetadataImage(configs=ConfigurationsImage({(4, ""): {"a": "1"}}))
    assert changed_parts(None, base, 1) == ALL_PARTS
    topic_only = replace(base, configs=ConfigurationsImage({**base.configs.resources, (2, "t"): {"x": "y"}}))
    assert changed_parts(base, topic_only, 1) == frozenset()
    other_broker = replace(base, configs=ConfigurationsImage({**base.configs.resources, (4, "2"): {"x": "y"}}))
    assert changed_parts(base, other_broker, 1) == frozenset()
    own = replace(base, configs=ConfigurationsImage({**base.configs.resources, (4, "1"): {"x": "y"}}))
    assert changed_parts(base, own, 1) == {"configs"}
    assert changed_parts(base, replace(base, acls={}), 1) == {"acls"}
    assert changed_parts(base, replace(base, scram={}, client_quotas={}), 1) == {"scram", "quotas"}
