"""Which brokers a ShareConsumer can use: the share-group APIs' versions Apache Kafka 4.4
serves (ApiVersions) and the share.version feature it finalizes when formatted."""

from __future__ import annotations

from harness.ports import LOOPBACK
from harness.probe import api_versions

from kafka_fast.config import make_config
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import API_VERSIONS
from kafka_fast.protocol import messages as m

SHARE_APIS = {76: "ShareGroupHeartbeat", 77: "ShareGroupDescribe", 78: "ShareFetch",
              79: "ShareAcknowledge"}


def test_kafka_4_4_serves_version_1_and_later_of_the_share_apis(apache_share_kafka):
    versions = api_versions(LOOPBACK, apache_share_kafka.port)
    served = {key: versions.get(key) for key in SHARE_APIS}
    if apache_share_kafka.version == "4.4.0":  # as docs/share-groups.md says
        assert served == {76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2)}
    # The client negotiates the newest of each (ShareFetch and ShareAcknowledge v2: RENEW).
    assert {key: API_VERSIONS[key][1] for key in SHARE_APIS} == {76: 1, 77: 1, 78: 2, 79: 2}
    for key, (low, high) in served.items():
        assert low <= API_VERSIONS[key][1] <= high, SHARE_APIS[key]


def test_a_new_kafka_4_4_cluster_finalizes_share_version_2(apache_share_kafka):
    with KafkaClient(make_config({"bootstrap.servers": apache_share_kafka.bootstrap},
                                 "admin")) as client:
        resp = client.send_any(m.ApiVersionsRequest(client_software_name="kafka-fast",
                                                    client_software_version="0")).result(30)
    finalized = {f.name: (f.min_version_level, f.max_version_level)
                 for f in resp.finalized_features}
    assert finalized["share.version"] == (2, 2), finalized
