"""`ssl.principal.mapping.rules`: the rule syntax and its results as Kafka's SslPrincipalMapper, then a broker
whose mutual-TLS listener maps the client certificate's DN to `User:client`, checked through ACLs with
confluent-kafka over real sockets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    KafkaError,
    KafkaException,
    Producer,
)
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from broker.config.kafka_config import ConfigError
from broker.security.principal_mapping import InvalidRule, NoMatchingRule, SslPrincipalMapper
from broker.testing import EmbeddedBroker, free_port
from tests.security.support import Pki

# ---- the rules ------------------------------------------------------------------------------------------

MANY = ", ".join([
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
    "DEFAULT",
])


@pytest.mark.parametrize(("dn", "name"), [
    ("CN=Duke,OU=ServiceUsers,O=Org,C=US", "duke"),
    ("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US", "duke@sme"),
    ("cn=duke,ou=sme,dc=mycp,dc=com", "DUKE@SME"),
    ("cN=duke,OU=JavaSoft,O=Sun Microsystems", "DUKE"),
    ("OU=JavaSoft,O=Sun Microsystems,C=US", "OU=JavaSoft,O=Sun Microsystems,C=US"),  # DEFAULT
])
def test_the_first_matching_rule_names_the_principal(dn: str, name: str) -> None:
    assert SslPrincipalMapper(MANY).name(dn) == name


@pytest.mark.parametrize("rules", [
    "DEFAULT", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
    "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    "", ",  , ,", "  RULE:// ,  DEFAULT  ", "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//",
])
def test_valid_rules_parse(rules: str) -> None:
    SslPrincipalMapper(rules)


@pytest.mark.parametrize("rules", [
    "default", "DEFAUL", "DEFAULT/L", "DEFAULT/U", "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
    "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/", "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/L", "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
    "RULE:^CN=((.*?)/$1/",  # a pattern that does not compile
])
def test_invalid_rules_are_refused(rules: str) -> None:
    with pytest.raises(InvalidRule):
        SslPrincipalMapper(rules)


def test_empty_entries_are_ignored_and_blanks_kept_inside_a_rule() -> None:
    mapper = SslPrincipalMapper(",,RULE:^(x)$/$1-y/,,,DEFAULT,,")
    assert len(mapper.rules) == 2
    assert mapper.name("x") == "x-y"
    assert mapper.name("z") == "z"


def test_escaped_commas_in_a_dn() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT")
    assert mapper.name("CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz") == "Tkac\\, Adam"


def test_group_references_beyond_the_pattern_stay_literal() -> None:
    # One group: `$12` is group 1 then "2", `$2` is the text "$2"; `\$` is a literal dollar.
    mapper = SslPrincipalMapper("RULE:^CN=(\\w+).*$/$12-$2-\\$1/")
    assert mapper.name("CN=alice,O=x") == "alice2-$2-$1"


def test_no_matching_rule() -> None:
    with pytest.raises(NoMatchingRule):
        SslPrincipalMapper("RULE:^CN=admin$/admin/").name("CN=client")


# ---- a broker that maps the DN ------------------------------------------------------------------------------

RULES = "RULE:^CN=([^,]+),.*$/$1/L, RULE:^CN=([^,]+)$/$1/L"


def _broker(pki: Pki, data_dir: Path, rules: str) -> tuple[EmbeddedBroker, str]:
    plain, mtls = free_port(), free_port()
    broker = EmbeddedBroker({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},MTLS://127.0.0.1:{mtls}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,MTLS:SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": rules,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",  # the PLAINTEXT listener sets things up
    }, data_dir=data_dir, port=plain).start()
    return broker, f"127.0.0.1:{mtls}"


def _produce(pki: Pki, bootstrap: str, topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SSL",
                         "ssl.ca.location": str(pki.ca), "ssl.certificate.location": str(pki.client_cert),
                         "ssl.key.location": str(pki.client_key), "message.timeout.ms": 8000})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(15)
    return errors[0] if errors else KafkaError(KafkaError._MSG_TIMED_OUT)


def test_acls_apply_to_the_mapped_principal(pki: Pki, tmp_path: Path) -> None:
    assert pki.client_dn.startswith("CN=client")
    broker, mtls = _broker(pki, tmp_path / "mapped", RULES)
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("granted", "not-granted")]).values():
            f.result(30)
        binding = AclBinding(ResourceType.TOPIC, "granted", ResourcePatternType.LITERAL, "User:client", "*",
                             AclOperation.WRITE, AclPermissionType.ALLOW)
        for f in admin.create_acls([binding]).values():
            f.result(30)
        assert _produce(pki, mtls, "granted") is None
        refused = _produce(pki, mtls, "not-granted")
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused
    finally:
        broker.stop()


def test_a_dn_no_rule_maps_cannot_connect(pki: Pki, tmp_path: Path, caplog: Any) -> None:
    broker, mtls = _broker(pki, tmp_path / "unmapped", "RULE:^CN=admin,.*$/admin/")
    try:
        error = _produce(pki, mtls, "anything")
        assert error is not None and error.code() != KafkaError.TOPIC_AUTHORIZATION_FAILED, error
        assert any("No rules apply to CN=client" in r.getMessage() for r in caplog.records)
        # the broker still serves its other listener
        assert AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10).brokers
    finally:
        broker.stop()


def test_rules_that_do_not_parse_stop_the_start(pki: Pki, tmp_path: Path) -> None:
    with pytest.raises((ConfigError, KafkaException, RuntimeError)) as e:
        _broker(pki, tmp_path / "invalid", "RULE:^CN=(.*?)$/$1/LU")
    assert "ssl.principal.mapping.rules" in str(e.value)
