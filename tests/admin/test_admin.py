"""AdminClient round trips on real brokers, checked against confluent-kafka's view."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from harness import create_topic, unique_topic
from harness.ports import free_port
from harness.topics import wait_for_topic

from kafka_fast import AdminClient as TopLevelAdminClient
from kafka_fast.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kafka_fast.errors import KafkaError, KafkaException

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def admin(kafka):
    client = AdminClient(kafka.client_config())
    yield client
    client.close()


def error_of(fut: Future) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        fut.result(20)
    return info.value.args[0]


def test_top_level_export():
    assert TopLevelAdminClient is AdminClient


def test_list_topics_on_the_mock_cluster(mock_cluster):
    topic = unique_topic("list")
    mock_cluster.create_topic(topic, partitions=3, replication_factor=2)
    for p, leader in enumerate([3, 1, 2]):
        mock_cluster.set_leader(topic, p, leader)
    with AdminClient(mock_cluster.client_config()) as admin:
        md = admin.list_topics(timeout=10)
        assert {b.id: (b.host, b.port) for b in md.brokers.values()} == mock_cluster.brokers
        assert all(str(b) == f"{b.host}:{b.port}/{b.id}" for b in md.brokers.values())
        tm = md.topics[topic]
        assert tm.error is None and tm.topic == topic
        assert {p.id: p.leader for p in tm.partitions.values()} == {0: 3, 1: 1, 2: 2}
        oracle = ReferenceAdmin(mock_cluster.client_config()).list_topics(topic, timeout=10)
        assert {p.id: (p.replicas, p.isrs) for p in tm.partitions.values()} == {
            p.id: (p.replicas, p.isrs) for p in oracle.topics[topic].partitions.values()}
        assert all(len(p.replicas) == 2 for p in tm.partitions.values())
        one = admin.list_topics(topic, timeout=10)
        assert list(one.topics) == [topic]
        assert one.orig_broker_id in mock_cluster.brokers


def test_create_list_describe_alter_delete(kafka, admin):
    topic = unique_topic("admin")
    futures = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1,
                                            config={"retention.ms": "123456"})],
                                  operation_timeout=10)
    assert list(futures) == [topic]
    assert futures[topic].result(20) is None
    assert wait_for_topic(kafka, topic, 3).keys() == {0, 1, 2}  # confluent-kafka sees it

    md = admin.list_topics(timeout=10)
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    assert all(p.leader in md.brokers for p in md.topics[topic].partitions.values())

    resource = ConfigResource(ResourceType.TOPIC, topic)
    configs = admin.describe_configs([resource])[resource].result(20)
    assert configs["retention.ms"].value == "123456"
    assert configs["retention.ms"].name == "retention.ms"

    alter = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "654321", incremental_operation=AlterConfigOpType.SET)])
    assert admin.incremental_alter_configs([alter])[alter].result(20) is None
    # Apache Kafka's brokers apply the change a moment after the controller accepted it.
    deadline = time.monotonic() + 10
    while True:
        configs = admin.describe_configs([resource])[resource].result(20)
        if configs["retention.ms"].value == "654321" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert configs["retention.ms"].value == "654321"

    deleted = admin.delete_topics([topic], operation_timeout=10)
    assert deleted[topic].result(20) is None
    # The broker's metadata cache learns of the deletion a moment after the controller.
    deadline = time.monotonic() + 10
    while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.1)
    assert topic not in admin.list_topics(timeout=10).topics
    assert topic not in ReferenceAdmin(kafka.client_config()).list_topics(timeout=10).topics


def test_errors_carry_the_broker_code(kafka, admin):
    topic = unique_topic("exists")
    create_topic(kafka, topic, partitions=1)
    missing = unique_topic("missing")
    futures = admin.create_topics([NewTopic(topic, 1, 1), NewTopic(missing + "-new", 1, 1)])
    err = error_of(futures[topic])
    assert err.code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert futures[missing + "-new"].result(20) is None
    err = error_of(admin.delete_topics([missing])[missing])
    assert err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    md = admin.list_topics(missing, timeout=10)
    assert md.topics[missing].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert md.topics[missing].partitions == {}


def test_create_partitions(kafka, admin):
    topic = unique_topic("grow")
    create_topic(kafka, topic, partitions=1)
    fut = admin.create_partitions([NewPartitions(topic, 3)], operation_timeout=10)[topic]
    if kafka.kind == "tansu":
        # Tansu 0.6 has no CreatePartitions API: the future says so.
        err = error_of(fut)
        assert err.code() == KafkaError._UNSUPPORTED_FEATURE
        assert "CreatePartitions" in err.str()
        return
    assert fut.result(20) is None
    assert wait_for_topic(kafka, topic, 3).keys() == {0, 1, 2}


def test_bad_arguments_are_refused(admin):
    with pytest.raises(ValueError, match="Duplicate"):
        admin.create_topics([NewTopic("a", 1, 1), NewTopic("a", 2, 1)])
    with pytest.raises(TypeError, match="NewTopic"):
        admin.create_topics(["a"])
    with pytest.raises(ValueError, match="non-empty"):
        admin.delete_topics([])
    with pytest.raises(TypeError, match="incremental_operation"):
        admin.incremental_alter_configs([ConfigResource(
            "topic", "a", incremental_configs=[ConfigEntry("retention.ms", "1")])])
    with pytest.raises(ValueError, match="Unknown resource type"):
        ConfigResource("nonsense", "a")


def test_error_cb_runs_on_the_admin_thread():
    calls = []
    done = threading.Event()

    def on_error(err):
        calls.append((err.code(), threading.current_thread().name))
        if err.code() == KafkaError._ALL_BROKERS_DOWN:
            done.set()

    conf = {"bootstrap.servers": f"127.0.0.1:{free_port()}", "error_cb": on_error,
            "request.timeout.ms": 1000}
    with AdminClient(conf) as admin:
        assert done.wait(5)
        with pytest.raises(KafkaException) as info:
            admin.list_topics(timeout=2)
        assert info.value.args[0].code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT)
    codes = [c for c, _ in calls]
    assert KafkaError._TRANSPORT in codes and KafkaError._ALL_BROKERS_DOWN in codes
    assert all(name.startswith("kafka_fast-events") for _, name in calls)
