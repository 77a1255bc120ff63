"""Configurations on Apache Kafka: incremental changes (SET, APPEND, SUBTRACT, DELETE) and
whole-set replacement read back, described as confluent-kafka describes them."""

from __future__ import annotations

import pytest
from admin_support import admin_for, wait_for
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from confluent_kafka.admin import ConfigResource as RefResource
from harness import create_topic, unique_topic

from kafka_fast.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)
from kafka_fast.errors import KafkaError, KafkaException

pytestmark = pytest.mark.timeout(90)
DEFAULT_RETENTION = "86400000"  # delete.retention.ms (one day)


def _view(entries) -> dict:
    return {name: (e.value, int(e.source), e.is_read_only, e.is_default, e.is_sensitive,
                   {s.name: (s.value, int(s.source), s.is_synonym)
                    for s in e.synonyms.values()})
            for name, e in entries.items()}


def _describe(admin, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource])[resource].result(30)


def _reference_view(broker, restype: str, name: str) -> dict:
    reference = ReferenceAdmin(broker.client_config())
    resource = RefResource(restype, name)
    return _view(reference.describe_configs([resource])[resource].result(30))


def test_incremental_changes_are_read_back(apache_kafka):
    topic = unique_topic("incr")
    create_topic(apache_kafka, topic, 1)
    resource = ConfigResource(ResourceType.TOPIC, topic)
    with admin_for(apache_kafka) as admin:
        before = _describe(admin, resource)
        assert before["cleanup.policy"].value == "delete"
        assert before["delete.retention.ms"].source == ConfigSource.DEFAULT_CONFIG
        assert before["delete.retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

        checked = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("delete.retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])
        (fut,) = admin.incremental_alter_configs([checked], validate_only=True).values()
        assert fut.result(30) is None

        first = ConfigResource("topic", topic)
        first.add_incremental_config(ConfigEntry(
            "delete.retention.ms", "123456", incremental_operation=AlterConfigOpType.SET))
        first.add_incremental_config(ConfigEntry(
            "cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND))
        futures = admin.incremental_alter_configs([first])
        assert list(futures) == [first] and futures[first].result(30) is None
        after = wait_for(lambda: (lambda c: c if c["delete.retention.ms"].value == "123456"
                                  else None)(_describe(admin, resource)), 10, "the change")
        assert after["cleanup.policy"].value == "delete,compact"
        assert after["delete.retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        assert not after["delete.retention.ms"].is_default

        second = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("cleanup.policy", "delete",
                        incremental_operation=AlterConfigOpType.SUBTRACT),
            ConfigEntry("delete.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
        assert admin.incremental_alter_configs([second])[second].result(30) is None
        final = wait_for(lambda: (lambda c: c if c["delete.retention.ms"].value == DEFAULT_RETENTION
                                  else None)(_describe(admin, resource)), 10, "the reset")
        assert final["cleanup.policy"].value == "compact"
        assert final["delete.retention.ms"].is_default
        assert final["delete.retention.ms"].source == ConfigSource.DEFAULT_CONFIG
        assert _view(final) == _reference_view(apache_kafka, "topic", topic)


def test_alter_configs_replaces_the_whole_set(apache_kafka):
    topic = unique_topic("whole")
    with admin_for(apache_kafka) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, config={"delete.retention.ms": "1000"})]
                            )[topic].result(30)
        resource = ConfigResource(ResourceType.TOPIC, topic,
                                  set_config={"max.message.bytes": "12345"})
        with pytest.warns(DeprecationWarning, match="incremental_alter_configs"):
            futures = admin.alter_configs([resource])
        assert futures[resource].result(30) is None
        described = wait_for(lambda: (lambda c: c if c["max.message.bytes"].value == "12345"
                                      else None)(_describe(admin, resource)), 10, "the change")
        assert described["delete.retention.ms"].value == DEFAULT_RETENTION  # reverted
        assert described["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG


def test_documentation_brokers_and_errors(apache_kafka):
    topic = unique_topic("docs")
    create_topic(apache_kafka, topic, 1)
    topic_res = ConfigResource(ResourceType.TOPIC, topic)
    broker_res = ConfigResource(ResourceType.BROKER, "1")
    missing = ConfigResource(ResourceType.TOPIC, unique_topic("missing"))
    with admin_for(apache_kafka) as admin:
        documented = admin.describe_configs([topic_res], include_documentation=True,
                                            broker=1)[topic_res].result(30)
        plain = _describe(admin, topic_res)
        assert "tombstone markers" in documented["delete.retention.ms"].documentation
        assert all(e.documentation is None for e in plain.values())
        brokers = _describe(admin, broker_res)
        assert brokers["message.max.bytes"].value == str(2 << 20)  # the harness's setting
        assert brokers["message.max.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG
        (fut,) = admin.describe_configs([missing]).values()
        with pytest.raises(KafkaException) as info:
            fut.result(30)
        assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        with pytest.raises(ValueError, match="broker id"):
            admin.describe_configs([ConfigResource(ResourceType.BROKER, "one")])
    theirs = _reference_view(apache_kafka, "broker", "1")
    ours = _view(brokers)
    assert {k: ours[k] for k in ("message.max.bytes", "num.io.threads", "log.dirs")} == {
        k: theirs[k] for k in ("message.max.bytes", "num.io.threads", "log.dirs")}
    assert _view(plain) == _reference_view(apache_kafka, "topic", topic)
