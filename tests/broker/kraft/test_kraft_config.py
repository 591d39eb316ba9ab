"""KRaft broker configuration (KafkaConfig.validateValues for process.roles=broker) and the format command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.common.metadata_version import MetadataVersion
from broker.config.kafka_config import ConfigError, KafkaConfig
from broker.kraft.format import FormatterError, feature_level, feature_release, format_dirs
from broker.kraft.snapshot import read_snapshot_records
from storage.checkpoints import read_properties, uuid_from_kafka_str

ROOT = Path(__file__).resolve().parents[3]


def kraft(tmp_path: Path, **extra: str) -> dict[str, str]:
    props = {"process.roles": "broker", "node.id": "4", "controller.quorum.voters": "1@127.0.0.1:9093",
             "controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:0",
             "log.dirs": str(tmp_path / "a")}
    props.update(extra)
    return {k: v for k, v in props.items() if v is not None}


def test_zookeeper_and_embedded_modes_unchanged(tmp_path: Path) -> None:
    config = KafkaConfig({"log.dirs": str(tmp_path)})
    assert not config.is_kraft and config.process_roles == []


def test_a_kraft_broker_config_and_its_derived_values(tmp_path: Path) -> None:
    config = KafkaConfig(kraft(tmp_path, **{"controller.quorum.voters": "1@h1:9093,2@[::1]:9094"}))
    assert config.is_kraft and config.broker_id == 4 and config["node.id"] == 4
    assert config.quorum_voters == {1: ("h1", 9093), 2: ("::1", 9094)}
    assert config.controller_listener_names == ["CONTROLLER"]
    assert config.controller_security_protocol == "PLAINTEXT"  # the default map gains the controller listener
    assert config.metadata_log_dir == tmp_path / "a"
    assert config["broker.heartbeat.interval.ms"] == 2000 and config["broker.session.timeout.ms"] == 9000
    assert config["initial.broker.registration.timeout.ms"] == 60000
    assert KafkaConfig(kraft(tmp_path, **{"metadata.log.dir": "/m"})).metadata_log_dir == Path("/m")
    assert KafkaConfig(kraft(tmp_path, **{"controller.quorum.voters": None,
                                          "controller.quorum.bootstrap.servers": "h:1,g:2"})
                       ).quorum_bootstrap_servers == [("h", 1), ("g", 2)]
    assert "process.roles" not in " ".join(KafkaConfig(kraft(tmp_path)).startup_warnings())


@pytest.mark.parametrize("extra, message", [
    ({"node.id": None}, "Missing configuration `node.id` which is required when `process.roles` is defined "
                        "(i.e. when running in KRaft mode)."),
    ({"controller.quorum.voters": None}, "If using process.roles, either controller.quorum.bootstrap.servers "
                                         "must contain the set of bootstrap controllers or controller.quorum.voters "
                                         "must contain a parseable set of controllers."),
    ({"controller.quorum.voters": "4@h:1"}, "requirement failed: If process.roles contains just the 'broker' role, "
                                            "the node id 4 must not be included in the set of voters "
                                            "controller.quorum.voters=Set(4)"),
    ({"controller.listener.names": None}, "requirement failed: controller.listener.names must contain at least one "
                                          "value when running KRaft with just the broker role"),
    ({"listeners": "PLAINTEXT://:1,CONTROLLER://:2",
      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
     "requirement failed: controller.listener.names must not contain a value appearing in the 'listeners' "
     "configuration when running KRaft with just the broker role"),
    ({"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"},
     "Controller listener with name CONTROLLER defined in controller.listener.names not found in "
     "listener.security.protocol.map"),
    ({"controller.quorum.voters": "1h:9093"}, "Invalid configuration value for controller.quorum.voters. Each entry "
                                              "should be in the form `{id}@{host}:{port}`."),
    ({"controller.quorum.voters": "x@h:9093"}, "Failed to parse voter ID as an integer from x"),
    ({"controller.quorum.voters": "1@h"}, "Failed to parse host name from entry 1@h for the configuration "
                                          "controller.quorum.voters"),
    ({"controller.quorum.voters": "1@0.0.0.0:9093"}, "Host string (0.0.0.0) is not routeable"),
    ({"controller.quorum.voters": None, "controller.quorum.bootstrap.servers": "nohost"},
     "Failed to parse host name from nohost for the configuration controller.quorum.bootstrap.servers"),
    ({"process.roles": "broker,broker"}, "Duplicate role names found in `process.roles`"),
    ({"process.roles": "broker,controller", "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9093"},
     "requirement failed: If process.roles contains the 'controller' role, the node id 4 must be included in the "
     "set of voters controller.quorum.voters=Set(1)"),
    ({"process.roles": "broker,controller", "controller.quorum.voters": "4@127.0.0.1:9093",
      "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9093",
      "advertised.listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9093",
      "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
     "requirement failed: advertised.listeners listener names must be equal to or a subset of the ones defined in "
     "listeners. Found CONTROLLER,PLAINTEXT. The valid options based on the current configuration are PLAINTEXT"),
    ({"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093"},
     "requirement failed: If process.roles contains just the 'controller' role, the node id 4 must be included in "
     "the set of voters controller.quorum.voters=Set(1)"),
    ({"process.roles": "controller", "controller.quorum.voters": "4@127.0.0.1:9093"},
     "requirement failed: controller.listener.names must contain at least one value appearing in the 'listeners' "
     "configuration when running the KRaft controller role"),
    ({"process.roles": "controller", "controller.quorum.voters": "4@127.0.0.1:9093",
      "listeners": "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092"},
     "requirement failed: The listeners config must only contain KRaft controller listeners from "
     "controller.listener.names when process.roles=controller"),
    ({"process.roles": "voter"}, "voter"),
])
def test_kraft_requirements_as_kafkas(tmp_path: Path, extra: dict[str, str | None], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        KafkaConfig(kraft(tmp_path, **extra))
    assert message in str(e.value)


def test_a_controller_only_node_is_configured_as_kafkas(tmp_path: Path) -> None:
    config = KafkaConfig(kraft(tmp_path, **{"process.roles": "controller", "controller.quorum.voters":
                                            "4@127.0.0.1:9093", "listeners": "CONTROLLER://127.0.0.1:9093"}))
    assert config.process_roles == ["controller"] and config.quorum_voters == {4: ("127.0.0.1", 9093)}
    assert [ep.listener for ep in config.listeners] == config.controller_listener_names == ["CONTROLLER"]


def test_a_combined_node_serves_its_broker_listeners_and_advertises_them_alone(tmp_path: Path) -> None:
    config = KafkaConfig(kraft(tmp_path, **{"process.roles": "broker,controller", "controller.quorum.voters":
                                            "4@127.0.0.1:9093",
                                            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"}))
    assert config.process_roles == ["broker", "controller"]
    assert [str(ep) for ep in config.broker_listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert [str(ep) for ep in config.advertised_listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert len(config.listeners) == 2


def test_feature_levels_of_metadata_version() -> None:
    assert feature_level(MetadataVersion.parse("3.0-IV1")) == 1
    assert feature_level(MetadataVersion.parse("3.3-IV0")) == 4
    assert feature_level(MetadataVersion.parse("3.7-IV4")) == 19
    assert feature_level(MetadataVersion.parse("3.9-IV0")) == 21
    # Kafka 4.x's KRaft-only levels, which are no inter.broker.protocol.version.
    assert feature_level("4.0-IV1") == 23 and feature_level("4.1") == 27 and feature_level("4.0.1") == 25
    assert feature_release(25) == "4.0-IV3" and feature_release(27) == "4.1-IV1" and feature_release(21) == "3.9-IV0"
    assert feature_release(19) == "3.7-IV4" and feature_release(7) == "3.3-IV3" and feature_release(99) == "99"


def test_format_writes_meta_properties_v1_and_bootstrap_in_every_dir(tmp_path: Path) -> None:
    config = KafkaConfig(kraft(tmp_path, **{"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}",
                                            "metadata.log.dir": str(tmp_path / "m")}))
    written = format_dirs(config, "MkU3OEVBNTcwNTJENDM2Qk", out=open("/dev/null", "w"))  # noqa: SIM115
    assert written == [tmp_path / "a", tmp_path / "b", tmp_path / "m"]
    ids = set()
    for d in written:
        props = read_properties(d / "meta.properties")
        assert props is not None and set(props) == {"version", "cluster.id", "node.id", "directory.id"}
        assert props["version"] == "1" and props["node.id"] == "4" and props["cluster.id"] == "MkU3OEVBNTcwNTJENDM2Qk"
        ids.add(uuid_from_kafka_str(props["directory.id"]))
        header, records = read_snapshot_records(d / "bootstrap.checkpoint")
        assert [(r.message.name, r.message.feature_level) for r in records] == [("metadata.version", 19)]
    assert len(ids) == 3
    with pytest.raises(FormatterError, match=r"Log directory .* is already formatted. Use --ignore-formatted"):
        format_dirs(config, "MkU3OEVBNTcwNTJENDM2Qk")
    (tmp_path / "c").mkdir()
    config2 = KafkaConfig(kraft(tmp_path, **{"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'c'}",
                                             "metadata.log.dir": str(tmp_path / "m")}))
    assert format_dirs(config2, "MkU3OEVBNTcwNTJENDM2Qk", ignore_formatted=True,
                       out=open("/dev/null", "w")) == [tmp_path / "c"]  # noqa: SIM115
    with pytest.raises(FormatterError, match="Invalid cluster.id"):
        format_dirs(config2, "other", ignore_formatted=True)
    with pytest.raises(FormatterError, match="legacy cluster"):
        format_dirs(KafkaConfig({"log.dirs": str(tmp_path / "z")}), "x")


def test_format_at_a_kafka_4_release_version(tmp_path: Path) -> None:
    config = KafkaConfig(kraft(tmp_path, **{"log.dirs": str(tmp_path / "a"), "metadata.log.dir": str(tmp_path / "a")}))
    format_dirs(config, "MkU3OEVBNTcwNTJENDM2Qk", release_version="4.1", out=open("/dev/null", "w"))  # noqa: SIM115
    _, records = read_snapshot_records(tmp_path / "a" / "bootstrap.checkpoint")
    assert [(r.message.name, r.message.feature_level) for r in records] == [("metadata.version", 27)]
    with pytest.raises(FormatterError, match="Version 4.9 is not a valid version"):
        format_dirs(config, "MkU3OEVBNTcwNTJENDM2Qk", release_version="4.9", ignore_formatted=True)


def test_format_command_line(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "broker", "format", "--cluster-id", "q1Sh-9_ISia_zwGINzRvyQ"]
    for k, v in kraft(tmp_path).items():
        args += ["--override", f"{k}={v}"]
    first = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert f"Formatting metadata log directory {tmp_path / 'a'} with metadata.version 3.7-IV4." in first.stdout
    again = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "is already formatted" in again.stderr
    ignored = subprocess.run(args + ["--ignore-formatted"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ignored.returncode == 0 and "All of the log directories are already formatted." in ignored.stdout


def test_format_features_go_into_the_bootstrap_after_metadata_version(tmp_path: Path) -> None:
    from broker.kraft.format import main as format_main

    args = ["--cluster-id", "MkU3OEVBNTcwNTJENDM2Qk", "--release-version", "4.1-IV1", "--feature", "group.version=1",
            "-f", "transaction.version=2"]
    for key, value in kraft(tmp_path, **{"process.roles": "controller", "controller.quorum.voters": "4@127.0.0.1:9093",
                                         "listeners": "CONTROLLER://127.0.0.1:9093"}).items():
        args += ["--override", f"{key}={value}"]
    assert format_main(args) == 0
    _, records = read_snapshot_records(tmp_path / "a" / "bootstrap.checkpoint")
    assert [(r.message.name, r.message.feature_level) for r in records] == [
        ("metadata.version", 27), ("group.version", 1), ("transaction.version", 2)]
    assert format_main(["--cluster-id", "x", "--feature", "group.version"]) == 1
