"""Which brokers a ShareConsumer can use: the share-group APIs' versions Apache Kafka serves
(ApiVersions), and the error against a broker that serves only newer versions."""

from __future__ import annotations

import time

import pytest
from harness.ports import LOOPBACK
from harness.probe import api_versions
from share_support import new_topic

from kafka_fast import KafkaError, KafkaException, ShareConsumer
from kafka_fast.config import make_config
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import messages as m

SHARE_APIS = {76: "ShareGroupHeartbeat", 77: "ShareGroupDescribe", 78: "ShareFetch",
              79: "ShareAcknowledge"}


def test_kafka_4_0_serves_version_0_of_the_share_apis(apache_share_kafka):
    assert apache_share_kafka.version == "4.0.2"
    versions = api_versions(LOOPBACK, apache_share_kafka.port)
    assert {key: versions.get(key) for key in SHARE_APIS} == {key: (0, 0) for key in SHARE_APIS}


def test_newer_kafka_serves_only_version_1_and_later(apache_kafka):
    versions = api_versions(LOOPBACK, apache_kafka.port)
    for key in SHARE_APIS:
        if key in versions:
            assert versions[key][0] >= 1, (SHARE_APIS[key], versions[key])
    if apache_kafka.version == "4.3.1":  # as docs/share-groups.md says
        assert {key: versions.get(key) for key in SHARE_APIS} == {
            76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2)}


def test_share_consumer_on_a_newer_broker_fails_clearly(apache_kafka):
    versions = api_versions(LOOPBACK, apache_kafka.port)
    with ShareConsumer({"bootstrap.servers": apache_kafka.bootstrap,
                        "group.id": "share-on-new-broker"}) as c:
        c.subscribe(["share-on-new-broker"])
        deadline = time.monotonic() + 30
        with pytest.raises(KafkaException) as raised:
            while time.monotonic() < deadline:
                c.poll(0.5)
    err = raised.value.args[0]
    assert err.code() == KafkaError._UNSUPPORTED_FEATURE
    assert err.fatal()
    assert "ShareGroupHeartbeat version 0" in err.str(), (err.str(), versions.get(76))


def test_kafka_4_0_share_fetch_wants_a_uuid_member_id(apache_share_kafka):
    bootstrap = apache_share_kafka.bootstrap
    topic = new_topic(bootstrap)
    R = m.ShareFetchRequest
    with KafkaClient(make_config({"bootstrap.servers": bootstrap}, "admin")) as client:
        client.wait_metadata([topic], timeout=30)
        topic_id = client.cluster.topics[topic].topic_id
        codes = {}
        for member_id in ("not-a-kafka-uuid", "AAAAAAAAAAAAAAAAAAAAAA"):
            req = R(group_id="share-uuid", member_id=member_id, share_session_epoch=0,
                    topics=[R.FetchTopic(topic_id=topic_id,
                                         partitions=[R.FetchPartition(partition_index=0)])])
            codes[member_id] = client.send_any(req).result(30).error_code
    assert codes == {"not-a-kafka-uuid": KafkaError.UNKNOWN, "AAAAAAAAAAAAAAAAAAAAAA": 0}
