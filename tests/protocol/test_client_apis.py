"""The generated codec holds exactly the client APIs of tools/gen_protocol.py's explicit list,
negotiates at most the versions the client code fills, and speaks the newest versions it
shares with Apache Kafka (the harness's 4.4.0) on the wire."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

import pytest
from harness.topics import unique_topic

from kafka_fast.net.versions import negotiate
from kafka_fast.protocol import API_KEYS, API_VERSIONS, messages
from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    DescribeClusterRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)

from .raw_client import RawConnection
from .test_real_brokers import batch_of, read_records

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "kafka_fast" / "protocol" / "messages"
SCHEMAS = (Path(os.environ["KAFKA_PROTOCOL_DIR"]).resolve()
           if os.environ.get("KAFKA_PROTOCOL_DIR") else None)

_spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "tools" / "gen_protocol.py")
gen = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("gen_protocol", gen)  # dataclasses look their module up
_spec.loader.exec_module(gen)

#: APIs and data schemas of Apache Kafka 4.4 only brokers and controllers send each other.
BROKER_INTERNAL = {
    "LeaderAndIsr", "StopReplica", "UpdateMetadata", "ControlledShutdown", "Vote",
    "BeginQuorumEpoch", "EndQuorumEpoch", "AlterPartition", "Envelope", "FetchSnapshot",
    "BrokerRegistration", "BrokerHeartbeat", "AllocateProducerIds", "ControllerRegistration",
    "AssignReplicasToDirs", "UpdateRaftVoter", "WriteTxnMarkers", "InitializeShareGroupState",
    "ReadShareGroupState", "WriteShareGroupState", "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
}
INTERNAL_DATA = {
    "DefaultPrincipalData", "KRaftVersionRecord", "LeaderChangeMessage", "SnapshotHeaderRecord",
    "SnapshotFooterRecord", "VotersRecord", "AbortedTxn", "ControlRecordTypeSchema",
    "EndTxnMarker",
}


def _listed() -> dict[str, int]:
    return {name: cap for domain in gen.CLIENT_APIS.values() for name, cap in domain.items()}


def test_generated_modules_are_the_explicit_list():
    expected = {f"{api}{kind}" for api in _listed() for kind in ("Request", "Response")}
    expected |= set(gen.CLIENT_DATA)
    assert set(messages.MODULES) == expected
    on_disk = {p.stem for p in OUT.glob("*.py")} - {"__init__"}
    assert on_disk == set(messages.MODULES.values())
    assert len(messages.MODULES) == 150 and len(messages.API_INDEX) == 73


def test_no_generated_module_is_broker_internal():
    names = set(messages.MODULES)
    for api in BROKER_INTERNAL:
        assert f"{api}Request" not in names and f"{api}Response" not in names, api
        assert api not in _listed()
    assert not names & INTERNAL_DATA
    for module in messages.MODULES.values():
        for word in ("share_group_state", "txn_markers", "raft_version", "snapshot_", "voters"):
            assert word not in module, module


def test_every_api_of_the_schemas_is_either_listed_or_broker_internal():
    if SCHEMAS is None:
        pytest.skip("no protocol schema folder: set KAFKA_PROTOCOL_DIR")
    listed = _listed()
    seen = set()
    for path in sorted((SCHEMAS / "message").glob("*Request.json")):
        doc = json.loads(gen.strip_comments(path.read_text()))
        api = re.sub(r"Request$", "", doc["name"])
        seen.add(api)
        if api in listed:
            # A client reaches it through a broker (possibly forwarded to the controller).
            assert "broker" in doc["listeners"], api
        else:
            assert api in BROKER_INTERNAL, f"{api} is neither listed nor broker-internal"
    assert set(listed) <= seen


def test_negotiation_is_capped_at_what_the_client_fills():
    for key, (request, _) in API_KEYS.items():
        low, cap = API_VERSIONS[key]
        assert low == request.MIN_VERSION and low <= cap <= request.MAX_VERSION
        assert cap == _listed()[request.NAME[:-len("Request")]]
    # Newer versions stay in the codec but out of negotiation: topic IDs only
    # (OffsetCommit/OffsetFetch 10, TxnOffsetCommit 6), ApiVersions 5. Produce 13 and Fetch 18
    # (topics by ID when metadata has them) and Metadata 13 are negotiated.
    expected = {0: (3, 13, 13), 1: (4, 18, 18), 8: (2, 9, 10), 9: (1, 9, 10), 28: (0, 5, 6),
                18: (0, 4, 5), 3: (0, 13, 13)}
    for key, (low, cap, newest) in expected.items():
        assert API_VERSIONS[key] == (low, cap)
        assert API_KEYS[key][0].MAX_VERSION == newest
    # A Kafka 4.4 broker's ranges: the client still picks its own highest versions.
    entry = type("Entry", (), {})
    ranges = []
    for key, (low, newest) in {0: (3, 13), 1: (4, 18), 8: (2, 10), 18: (0, 5)}.items():
        e = entry()
        e.api_key, e.min_version, e.max_version = key, low, newest
        ranges.append(e)
    assert negotiate(ranges, API_VERSIONS) == {0: 13, 1: 18, 8: 9, 18: 4}


def test_share_group_versions():
    # 4.4's schemas start at version 1 (KIP-932's stable version; Kafka 4.0's early-access
    # version 0 is gone), and the share consumer negotiates the newest.
    got = {name: (getattr(messages, name + "Request").MIN_VERSION,
                  getattr(messages, name + "Request").MAX_VERSION)
           for name in ("ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch",
                        "ShareAcknowledge", "DescribeShareGroupOffsets",
                        "AlterShareGroupOffsets", "DeleteShareGroupOffsets")}
    assert got == {"ShareGroupHeartbeat": (1, 1), "ShareGroupDescribe": (1, 1),
                   "ShareFetch": (1, 2), "ShareAcknowledge": (1, 2),
                   "DescribeShareGroupOffsets": (0, 1), "AlterShareGroupOffsets": (0, 0),
                   "DeleteShareGroupOffsets": (0, 0)}
    assert {key: API_VERSIONS[key] for key in (76, 77, 78, 79)} == {
        76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2)}
    # Version 1 has MaxRecords and BatchSize instead of PartitionMaxBytes; version 2 adds
    # ShareAcquireMode and IsRenewAck.
    R = messages.ShareFetchRequest
    req = R(group_id="g", member_id="m", share_session_epoch=0, max_records=5, batch_size=5,
            share_acquire_mode=1, is_renew_ack=True,
            topics=[R.FetchTopic(topic_id=uuid.UUID(int=1),
                                 partitions=[R.FetchPartition(partition_index=2)])])
    assert R.decode(req.encode(2), 2, strict=True) == req
    with pytest.raises(Exception, match="is_renew_ack"):
        req.encode(1)
    req.is_renew_ack, req.share_acquire_mode = False, 0
    assert R.decode(req.encode(1), 1, strict=True) == req
    with pytest.raises(Exception, match="partition_max_bytes"):
        R(topics=[R.FetchTopic(partitions=[R.FetchPartition(partition_max_bytes=7)])]).encode(1)


def _call_retrying(conn, request, version, ok, timeout=15.0):
    """``conn.call`` until ``ok(response)`` (a new topic's leader needs a moment)."""
    deadline = time.monotonic() + timeout
    while True:
        resp = conn.call(request, version)
        if ok(resp) or time.monotonic() > deadline:
            return resp
        time.sleep(0.1)


def test_newest_common_versions_against_apache_kafka(apache_kafka):
    """ApiVersions, then each message at the newest version both the codec and the broker
    speak (not the client's caps): CreateTopics, Metadata, Produce, Fetch, ListOffsets and
    DescribeCluster, checked against the records written."""
    host, port = apache_kafka.bootstrap.split(",")[0].rsplit(":", 1)
    codec = {key: (req.MIN_VERSION, req.MAX_VERSION) for key, (req, _) in API_KEYS.items()}
    with RawConnection(host, int(port)) as conn:
        first = conn.call(ApiVersionsRequest(), 0)
        assert first.error_code == 0
        broker = {e.api_key: (e.min_version, e.max_version) for e in first.api_keys}
        newest = negotiate(first.api_keys, codec)
        for key in (0, 1, 2, 3, 18, 19, 60):
            assert newest[key] == min(broker[key][1], codec[key][1]), key
        if apache_kafka.version == "4.4.0":
            assert {k: newest[k] for k in (0, 1, 2, 3, 18, 60)} == {
                0: 13, 1: 18, 2: 11, 3: 13, 18: 5, 60: 2}

        again = conn.call(ApiVersionsRequest(client_software_name="kafka-fast",
                                             client_software_version="1"), newest[18])
        assert again.error_code == 0
        assert {e.api_key: (e.min_version, e.max_version) for e in again.api_keys} == broker

        topic = unique_topic("newest")
        created = conn.call(CreateTopicsRequest(
            topics=[CreateTopicsRequest.CreatableTopic(name=topic, num_partitions=2,
                                                       replication_factor=1)],
            timeout_ms=10_000), newest[19])
        [result] = created.topics
        assert (result.name, result.error_code, result.num_partitions) == (topic, 0, 2)
        topic_id = result.topic_id

        meta = _call_retrying(
            conn, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]),
            newest[3], lambda r: all(p.leader_id >= 0 for t in r.topics for p in t.partitions)
            and r.topics[0].error_code == 0)
        [t] = meta.topics
        assert (t.name, t.topic_id, sorted(p.partition_index for p in t.partitions)) == (
            topic, topic_id, [0, 1])
        assert meta.error_code == 0  # the top-level error code of Metadata v13

        records = [(b"k%d" % i, b"value-%d" % i) for i in range(3)]
        P = ProduceRequest
        data = P.TopicProduceData(partition_data=[P.PartitionProduceData(
            index=1, records=batch_of(records, 1_700_000_000_000))])
        if newest[0] >= 13:
            data.topic_id = topic_id
        else:
            data.name = topic
        produced = _call_retrying(
            conn, P(acks=-1, timeout_ms=10_000, topic_data=[data]), newest[0],
            lambda r: r.responses[0].partition_responses[0].error_code == 0)
        [tr] = produced.responses
        [pr] = tr.partition_responses
        assert (pr.index, pr.error_code, pr.base_offset) == (1, 0, 0)
        if newest[0] >= 13:
            assert (tr.topic_id, tr.name) == (topic_id, "")

        F = FetchRequest
        fetched = conn.call(F(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20,
                              topics=[F.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
                                  F.FetchPartition(partition=1, fetch_offset=0,
                                                   partition_max_bytes=1 << 20)])]),
                            newest[1])
        assert fetched.error_code == 0
        [ft] = fetched.responses
        [fp] = ft.partitions
        assert (ft.topic_id, fp.partition_index, fp.error_code, fp.high_watermark) == (
            topic_id, 1, 0, 3)
        assert read_records(fp.records) == [
            (i, 1_700_000_000_000 + i, k, v) for i, (k, v) in enumerate(records)]

        L = ListOffsetsRequest
        listed = conn.call(L(replica_id=-1, topics=[L.ListOffsetsTopic(name=topic, partitions=[
            L.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=-1)
            for p in (0, 1)])]), newest[2])
        [lt] = listed.topics
        assert sorted((p.partition_index, p.error_code, p.offset) for p in lt.partitions) == [
            (0, 0, 0), (1, 0, 3)]

        cluster = conn.call(DescribeClusterRequest(), newest[60])
        assert (cluster.error_code, cluster.cluster_id) == (0, meta.cluster_id)
        assert sorted(b.broker_id for b in cluster.brokers) == sorted(
            b.node_id for b in meta.brokers)


def test_error_codes_of_kafka_4_4():
    from kafka_fast import KafkaError
    from kafka_fast.errors.codes import BROKER_ERRORS

    newer = {99: "POSITION_OUT_OF_RANGE", 129: "REBOOTSTRAP_REQUIRED",
             130: "STREAMS_INVALID_TOPOLOGY", 131: "STREAMS_INVALID_TOPOLOGY_EPOCH",
             132: "STREAMS_TOPOLOGY_FENCED", 133: "SHARE_SESSION_LIMIT_REACHED",
             134: "GROUP_DELETION_FAILED", 135: "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED",
             136: "CONTROLLER_ID_NOT_REGISTERED"}
    assert {code: BROKER_ERRORS[code][0] for code in newer} == newer
    assert max(BROKER_ERRORS) == 136
    for code, name in newer.items():
        assert KafkaError(code).name() == name and getattr(KafkaError, name) == code
    assert KafkaError.of(133).retriable() and not KafkaError.of(129).retriable()
    assert KafkaError(129).str() == ("Broker: Client metadata is stale. The client should "
                                     "rebootstrap to obtain new metadata.")


def test_a_versioned_request_stops_at_the_client_version():
    from kafka_fast.protocol.versioned import VersionedRequest

    R = messages.TxnOffsetCommitRequest  # v6 names topics by ID, which the client does not fill
    assert R.MAX_VERSION == 6
    assert VersionedRequest(R, lambda v: R()).MAX_VERSION == 5
    assert VersionedRequest(R, lambda v: R(), max_version=4).MAX_VERSION == 4
    assert VersionedRequest(R, lambda v: R(), max_version=6).MAX_VERSION == 5
