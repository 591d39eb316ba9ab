"""Group configs' rules: the by_duration form of share.auto.offset.reset and Kafka's GroupConfig bounds."""

from __future__ import annotations

from types import SimpleNamespace

from broker.config.group_configs import GroupConfigs, by_duration_ms
from broker.config.kafka_config import KafkaConfig


def test_by_duration_reads_iso_8601_durations() -> None:
    assert by_duration_ms("by_duration:PT1H") == 3_600_000
    assert by_duration_ms("by_duration:P1DT2H3M4.5S") == 93_784_500
    assert by_duration_ms("by_duration:PT0S") == 0
    for bad in ("by_duration:P", "by_duration:PT", "by_duration:1H", "by_duration:-PT1H", "latest"):
        assert by_duration_ms(bad) is None


def test_validation_as_kafkas_group_config(tmp_path) -> None:  # type: ignore[no-untyped-def]
    configs = GroupConfigs(SimpleNamespace(config=KafkaConfig({"log.dirs": str(tmp_path)})))  # type: ignore[arg-type]
    assert configs.validate({"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000",
                             "share.session.timeout.ms": "50000", "share.heartbeat.interval.ms": "6000"}) is None
    assert configs.validate({"share.auto.offset.reset": "by_duration:PT10M"}) is None
    assert "one of" in (configs.validate({"share.auto.offset.reset": "newest"}) or "")
    assert "ISO-8601" in (configs.validate({"share.auto.offset.reset": "by_duration:10m"}) or "")
    assert "greater than or equal" in (configs.validate({"share.record.lock.duration.ms": "100"}) or "")
    assert "Not a number" in (configs.validate({"share.session.timeout.ms": "soon"}) or "")
    assert configs.validate({"consumer.session.timeout.ms": "45000"}) == \
        "Unknown group config name: consumer.session.timeout.ms"
    assert configs.value({}, "share.record.lock.duration.ms") == "30000"
    assert configs.value({"share.auto.offset.reset": "earliest"}, "share.auto.offset.reset") == "earliest"
