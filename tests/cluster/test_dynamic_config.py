"""Dynamic broker configs in a 3-broker cluster on a real ZooKeeper: a cluster-wide default set through one
broker is stored as Kafka stores it (/config/brokers/<default> plus a change notification) and reaches every
broker without a restart (their own view, and the topic defaults derived from it); a per-broker config stays
on its broker; a restarted broker loads both from ZooKeeper."""

from __future__ import annotations

import json
from pathlib import Path

from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from protocol import ApiKey, request_class
from tests.cluster.support import Zk, admin, create_topic, raw_request, start_cluster, wait_until

DYN_DEFAULT, DYN_BROKER, DEFAULT = 3, 2, 5


def incremental_set(port: int, broker: str, key: str, value: str) -> tuple[int, str | None]:
    Req = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)[1]
    resource = Req.AlterConfigsResource(resource_type=4, resource_name=broker, configs=[
        Req.AlterConfigsResource.AlterableConfig(name=key, config_operation=0, value=value)])
    [answer] = raw_request(port, Req(resources=[resource], validate_only=False)).responses
    return answer.error_code, answer.error_message


def described(port: int, resource_type: int, name: str, key: str) -> tuple[str | None, int]:
    Req = request_class(ApiKey.DESCRIBE_CONFIGS)[4]
    request = Req(resources=[Req.DescribeConfigsResource(resource_type=resource_type, resource_name=name,
                                                         configuration_keys=[key])],
                  include_synonyms=False, include_documentation=False)
    [result] = raw_request(port, request).results
    assert result.error_code == 0, result.error_message
    [entry] = result.configs
    return entry.value, entry.config_source


def test_cluster_default_reaches_every_broker(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, {})
    zk = Zk(cluster)
    try:
        create_topic(cluster.bootstrap, "dyn", 3, 1)
        assert incremental_set(cluster.ports[0], "", "log.retention.ms", "3600000") == (0, None)

        data, _ = zk.client.get("/config/brokers/<default>")
        assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "3600000"}}
        notes = [json.loads(zk.client.get(f"/config/changes/{child}")[0])
                 for child in zk.client.get_children("/config/changes")]
        assert {"version": 2, "entity_path": "brokers/<default>"} in notes

        for i, port in enumerate(cluster.ports):
            wait_until(lambda p=port, b=i: described(p, 4, str(b), "log.retention.ms") == ("3600000", DYN_DEFAULT),
                       15, f"broker {i} to apply the cluster default")
            assert described(port, 2, "dyn", "retention.ms") == ("3600000", DYN_DEFAULT)

        # A per-broker config, set through confluent-kafka (which sends it to that broker), stays there.
        client = admin(cluster.bootstrap)
        resource = ConfigResource("broker", "1", incremental_configs=[
            ConfigEntry("message.max.bytes", "2000000", incremental_operation=AlterConfigOpType.SET)])
        client.incremental_alter_configs([resource])[resource].result(20)
        assert described(cluster.ports[1], 4, "1", "message.max.bytes") == ("2000000", DYN_BROKER)
        assert described(cluster.ports[2], 4, "2", "message.max.bytes") == ("1048588", DEFAULT)
        data, _ = zk.client.get("/config/brokers/1")
        assert json.loads(data) == {"version": 1, "config": {"message.max.bytes": "2000000"}}

        cluster.restart(1)
        assert described(cluster.ports[1], 4, "1", "message.max.bytes") == ("2000000", DYN_BROKER)
        assert described(cluster.ports[1], 4, "1", "log.retention.ms") == ("3600000", DYN_DEFAULT)
    finally:
        zk.close()
        cluster.stop()
