"""Kafka 3.x ZooKeeper-mode paths and znode JSON, encoded and decoded exactly as Kafka's ZkData does.

Contract: pure functions, no I/O. Encoders produce compact JSON (Jackson's form, no spaces) with the
fields and `version` numbers Kafka 3.x writes, so Kafka's tools and brokers can read our znodes.
Decoders accept what Kafka writes (including older versions of the same node where that is cheap)
and raise `MetadataCorruptError` on anything else, never a bare KeyError/ValueError: znode contents
are untrusted input. Decoded sizes are bounded by ZooKeeper's 1 MiB znode limit (`MAX_ZNODE_BYTES`).

Layout (paths relative to the chroot in `zookeeper.connect`; "(E)" marks ephemeral nodes):
  /cluster/id                      {"version":"1","id":"<cluster id>"}
  /controller (E)                  {"version":2,"brokerid":1,"timestamp":"<ms>","kraftControllerEpoch":-1}
  /controller_epoch                1   (plain decimal; its znode version fences stale controllers)
  /brokers/ids/<id> (E)            {"features":{},"listener_security_protocol_map":{...},
                                    "endpoints":["PLAINTEXT://h:p"],"jmx_port":-1,"port":p,
                                    "host":"h","version":5,"timestamp":"<ms>"[,"rack":"r"]}
  /brokers/topics/<topic>          {"partitions":{"0":[1,2,3]},"topic_id":"<base64 uuid>",
                                    "adding_replicas":{},"removing_replicas":{},"version":3}
  /brokers/topics/<t>/partitions/<p>/state
                                   {"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,
                                    "isr":[1,2,3][,"leader_recovery_state":1]}
  /brokers/seqid
  /config/topics/<topic>           {"version":1,"config":{"k":"v"}}
  /config/changes/config_change_<seq>
                                   {"version":2,"entity_path":"topics/<topic>"}
  /admin/delete_topics/<topic>     (empty)
  /admin/reassign_partitions       {"version":1,"partitions":[{"topic":..,"partition":..,"replicas":[..]}]}
  /admin/preferred_replica_election
                                   {"version":1,"partitions":[{"topic":..,"partition":..}]}
  /latest_producer_id_block        {"version":1,"broker":1,"block_start":"0","block_end":"999"}
  /isr_change_notification/isr_change_<seq>
                                   {"version":1,"partitions":[{"topic":..,"partition":..}]}
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from broker.metadata.types import BrokerInfo, LeaderAndIsr, MetadataCorruptError, TopicInfo
from storage.values import TopicPartition

MAX_ZNODE_BYTES = 1 << 20  # ZooKeeper's default jute.maxbuffer

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"

PRODUCER_ID_BLOCK = "/latest_producer_id_block"
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE

# Kafka's controller and brokers create these persistent parents at startup (ZkData.PersistentZkPaths).
PERSISTENT_PATHS = (
    "/consumers",
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    PRODUCER_ID_BLOCK,
    "/log_dir_event_notification",
    CONFIG_TOPICS,
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)

# KafkaController.InitialControllerEpoch: the first elected controller gets epoch 1.
INITIAL_CONTROLLER_EPOCH = 0

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def is_decimal(text: str) -> bool:
    """ASCII digits only: str.isdigit() also accepts characters int() rejects (e.g. superscripts)."""
    return text.isascii() and text.isdigit() and len(text) <= 20


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def _loads(data: bytes | None, what: str) -> Any:
    if data is None:
        raise MetadataCorruptError(f"{what}: znode has no data")
    if len(data) > MAX_ZNODE_BYTES:
        raise MetadataCorruptError(f"{what}: {len(data)} bytes exceeds {MAX_ZNODE_BYTES}")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise MetadataCorruptError(f"{what}: not JSON: {e}") from None


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MetadataCorruptError(f"{what}: expected a JSON object")
    return value


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    # Kafka writes some integers as strings ("version":"1" in /cluster/id, timestamps); accept both.
    if isinstance(value, bool):
        raise MetadataCorruptError(f"{what}: {key!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise MetadataCorruptError(f"{what}: {key!r} is not an integer: {value!r}")


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise MetadataCorruptError(f"{what}: expected a list of integers, got {value!r}")
    return tuple(value)


def _now_ms() -> str:
    return str(int(time.time() * 1000))


# --- topic ids -----------------------------------------------------------------------------------


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding (22 characters)."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode("ascii")


def topic_id_from_string(text: str) -> uuid.UUID:
    """Inverse of `topic_id_to_string`; raises MetadataCorruptError on anything but 22 base64 chars."""
    if not isinstance(text, str) or len(text) != 22:
        raise MetadataCorruptError(f"bad topic id {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except ValueError:
        raise MetadataCorruptError(f"bad topic id {text!r}") from None
    if len(raw) != 16:
        raise MetadataCorruptError(f"bad topic id {text!r}")
    return uuid.UUID(bytes=raw)


# --- /cluster/id ---------------------------------------------------------------------------------


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None) -> str:
    obj = _object(_loads(data, CLUSTER_ID), CLUSTER_ID)
    value = obj.get("id")
    if not isinstance(value, str) or not value:
        raise MetadataCorruptError(f"{CLUSTER_ID}: missing id")
    return value


def new_cluster_id() -> str:
    """A cluster id as Kafka generates one: a random Uuid in its base64 form."""
    return topic_id_to_string(uuid.uuid4())


# --- /controller and /controller_epoch -----------------------------------------------------------


def encode_controller(broker_id: int, timestamp_ms: str | None = None) -> bytes:
    return _dumps(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": timestamp_ms or _now_ms(),
            "kraftControllerEpoch": -1,
        }
    )


def decode_controller(data: bytes | None) -> int:
    return _int(_object(_loads(data, CONTROLLER), CONTROLLER), "brokerid", CONTROLLER)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes | None) -> int:
    if data is None or len(data) > 32:
        raise MetadataCorruptError(f"{CONTROLLER_EPOCH}: bad data {data!r}")
    try:
        return int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise MetadataCorruptError(f"{CONTROLLER_EPOCH}: bad data {data!r}") from None


# --- /brokers/ids/<id> ---------------------------------------------------------------------------


def parse_endpoint(endpoint: str) -> tuple[str, str, int]:
    """ "LISTENER://host:port" -> (listener, host, port); IPv6 hosts may be bracketed."""
    listener, sep, address = endpoint.partition("://")
    host, colon, port_text = address.rpartition(":")
    if not sep or not colon or not listener:
        raise MetadataCorruptError(f"bad endpoint {endpoint!r}")
    try:
        port = int(port_text)
    except ValueError:
        raise MetadataCorruptError(f"bad endpoint {endpoint!r}") from None
    if not 0 <= port <= 65535:
        raise MetadataCorruptError(f"bad endpoint {endpoint!r}")
    return listener, host.strip("[]"), port


def default_security_protocol_map(endpoints: Iterable[str]) -> dict[str, str]:
    """Listener name -> security protocol; a listener named after a protocol uses it, others PLAINTEXT."""
    result: dict[str, str] = {}
    for endpoint in endpoints:
        listener, _, _ = parse_endpoint(endpoint)
        result[listener] = listener if listener in SECURITY_PROTOCOLS else "PLAINTEXT"
    return result


def encode_broker(
    endpoints: Sequence[str],
    rack: str | None,
    listener_security_protocol_map: Mapping[str, str] | None = None,
    jmx_port: int = -1,
    timestamp_ms: str | None = None,
) -> bytes:
    """Version 5 broker registration. host/port are the first PLAINTEXT endpoint's (null/-1 if none)."""
    protocol_map = dict(listener_security_protocol_map or default_security_protocol_map(endpoints))
    host: str | None = None
    port = -1
    for endpoint in endpoints:
        listener, endpoint_host, endpoint_port = parse_endpoint(endpoint)
        if listener not in protocol_map:
            raise MetadataCorruptError(f"listener {listener!r} has no security protocol")
        if protocol_map[listener] == "PLAINTEXT" and host is None:
            host, port = endpoint_host, endpoint_port
    value: dict[str, Any] = {
        "features": {},
        "listener_security_protocol_map": protocol_map,
        "endpoints": list(endpoints),
        "jmx_port": jmx_port,
        "port": port,
        "host": host,
        "version": 5,
        "timestamp": timestamp_ms or _now_ms(),
    }
    if rack is not None:
        value["rack"] = rack
    return _dumps(value)


def decode_broker(broker_id: int, data: bytes | None) -> BrokerInfo:
    what = broker_path(broker_id)
    obj = _object(_loads(data, what), what)
    version = _int(obj, "version", what)
    if version < 1:
        raise MetadataCorruptError(f"{what}: unsupported version {version}")
    if version == 1:
        endpoints: tuple[str, ...] = (f"PLAINTEXT://{obj.get('host')}:{_int(obj, 'port', what)}",)
    else:
        raw = obj.get("endpoints")
        if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
            raise MetadataCorruptError(f"{what}: endpoints must be a list of strings")
        endpoints = tuple(raw)
        for endpoint in endpoints:
            parse_endpoint(endpoint)
    protocol_map = obj.get("listener_security_protocol_map")
    if protocol_map is None:
        protocol_map = default_security_protocol_map(endpoints)
    if not isinstance(protocol_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in protocol_map.items()
    ):
        raise MetadataCorruptError(f"{what}: bad listener_security_protocol_map")
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise MetadataCorruptError(f"{what}: rack must be a string")
    timestamp = obj.get("timestamp")
    return BrokerInfo(
        broker_id=broker_id,
        endpoints=endpoints,
        rack=rack,
        listener_security_protocol_map=dict(protocol_map),
        version=version,
        timestamp_ms=int(timestamp) if isinstance(timestamp, str) and is_decimal(timestamp) else -1,
    )


# --- /brokers/topics/<topic> ---------------------------------------------------------------------


def _partition_map(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(replicas) for p, replicas in sorted(assignment.items())}


def encode_topic(
    topic_id: uuid.UUID | None,
    assignment: Mapping[int, Sequence[int]],
    adding_replicas: Mapping[int, Sequence[int]] | None = None,
    removing_replicas: Mapping[int, Sequence[int]] | None = None,
) -> bytes:
    value: dict[str, Any] = {
        "partitions": _partition_map(assignment),
        "adding_replicas": _partition_map({p: r for p, r in (adding_replicas or {}).items() if r}),
        "removing_replicas": _partition_map({p: r for p, r in (removing_replicas or {}).items() if r}),
        "version": 3,
    }
    if topic_id is not None:
        value["topic_id"] = topic_id_to_string(topic_id)
    return _dumps(value)


def _decode_partition_map(value: Any, what: str) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    obj = _object(value, what)
    result: dict[int, tuple[int, ...]] = {}
    for key, replicas in obj.items():
        try:
            partition = int(key)
        except ValueError:
            raise MetadataCorruptError(f"{what}: bad partition {key!r}") from None
        if partition < 0:
            raise MetadataCorruptError(f"{what}: bad partition {key!r}")
        result[partition] = _int_list(replicas, what)
    return dict(sorted(result.items()))


def decode_topic(name: str, data: bytes | None, version: int = 0) -> TopicInfo:
    what = topic_path(name)
    obj = _object(_loads(data, what), what)
    raw_id = obj.get("topic_id")
    return TopicInfo(
        name=name,
        topic_id=topic_id_from_string(raw_id) if raw_id is not None else None,
        assignment=_decode_partition_map(obj.get("partitions"), what),
        adding_replicas=_decode_partition_map(obj.get("adding_replicas"), what),
        removing_replicas=_decode_partition_map(obj.get("removing_replicas"), what),
        zk_version=version,
    )


# --- /brokers/topics/<t>/partitions/<p>/state ----------------------------------------------------


def encode_partition_state(state: LeaderAndIsr) -> bytes:
    value: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "version": 1,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
    }
    # Kafka writes the field only when the leader is RECOVERING (KIP-704).
    if state.leader_recovery_state != 0:
        value["leader_recovery_state"] = state.leader_recovery_state
    return _dumps(value)


def decode_partition_state(topic: str, partition: int, data: bytes | None, version: int) -> LeaderAndIsr:
    what = partition_state_path(topic, partition)
    obj = _object(_loads(data, what), what)
    recovery = obj.get("leader_recovery_state", 0)
    if recovery not in (0, 1):
        raise MetadataCorruptError(f"{what}: bad leader_recovery_state {recovery!r}")
    return LeaderAndIsr(
        leader=_int(obj, "leader", what),
        leader_epoch=_int(obj, "leader_epoch", what),
        isr=_int_list(obj.get("isr"), what),
        controller_epoch=_int(obj, "controller_epoch", what),
        partition_epoch=version,
        leader_recovery_state=recovery,
    )


# --- /config/topics/<topic> and /config/changes --------------------------------------------------


def encode_topic_config(configs: Mapping[str, str]) -> bytes:
    return _dumps({"version": 1, "config": {str(k): str(v) for k, v in configs.items()}})


def decode_topic_config(topic: str, data: bytes | None) -> dict[str, str]:
    what = topic_config_path(topic)
    if not data:
        return {}
    obj = _object(_loads(data, what), what)
    config = obj.get("config", {})
    if not isinstance(config, dict):
        raise MetadataCorruptError(f"{what}: config must be an object")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def encode_config_change(entity_path: str) -> bytes:
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes | None) -> str:
    """The entity path ("topics/<name>") a version 2 config change notification names."""
    obj = _object(_loads(data, CONFIG_CHANGES), CONFIG_CHANGES)
    if _int(obj, "version", CONFIG_CHANGES) != 2:
        raise MetadataCorruptError(f"{CONFIG_CHANGES}: unsupported notification version")
    entity_path = obj.get("entity_path")
    if not isinstance(entity_path, str):
        raise MetadataCorruptError(f"{CONFIG_CHANGES}: missing entity_path")
    return entity_path


# --- partition lists: ISR change notifications, preferred replica election, reassignment ----------


def encode_partition_list(partitions: Iterable[TopicPartition]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]})


def decode_partition_list(data: bytes | None, what: str) -> list[TopicPartition]:
    obj = _object(_loads(data, what), what)
    raw = obj.get("partitions")
    if not isinstance(raw, list):
        raise MetadataCorruptError(f"{what}: partitions must be a list")
    result: list[TopicPartition] = []
    for item in raw:
        entry = _object(item, what)
        topic = entry.get("topic")
        if not isinstance(topic, str):
            raise MetadataCorruptError(f"{what}: topic must be a string")
        result.append(TopicPartition(topic, _int(entry, "partition", what)))
    return result


def encode_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    return _dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
                for tp, replicas in reassignment.items()
            ],
        }
    )


def decode_reassignment(data: bytes | None) -> dict[TopicPartition, tuple[int, ...]]:
    what = REASSIGN_PARTITIONS
    obj = _object(_loads(data, what), what)
    raw = obj.get("partitions")
    if not isinstance(raw, list):
        raise MetadataCorruptError(f"{what}: partitions must be a list")
    result: dict[TopicPartition, tuple[int, ...]] = {}
    for item in raw:
        entry = _object(item, what)
        topic = entry.get("topic")
        if not isinstance(topic, str):
            raise MetadataCorruptError(f"{what}: topic must be a string")
        result[TopicPartition(topic, _int(entry, "partition", what))] = _int_list(entry.get("replicas"), what)
    return result


# --- /latest_producer_id_block -------------------------------------------------------------------


def encode_producer_id_block(broker_id: int, block_start: int, block_end: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "block_start": str(block_start), "block_end": str(block_end)})


def decode_producer_id_block(data: bytes | None) -> tuple[int, int, int] | None:
    """(broker, block_start, block_end), or None for the empty node Kafka creates at startup."""
    if not data:
        return None
    what = PRODUCER_ID_BLOCK
    obj = _object(_loads(data, what), what)
    start, end = _int(obj, "block_start", what), _int(obj, "block_end", what)
    if start < 0 or end < start:
        raise MetadataCorruptError(f"{what}: bad block {start}..{end}")
    return _int(obj, "broker", what), start, end
