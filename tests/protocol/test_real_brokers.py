"""The codec against real brokers (Tansu and librdkafka's mock cluster).

Requests are built with the codec and sent on a plain socket; the replies are decoded and
checked against what the broker must have answered. Record batches are built and read with
kafka-python's record code, independent of ours.
"""

from __future__ import annotations

import time
import uuid

import pytest
from harness.topics import unique_topic
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    ProduceRequest,
)

from .raw_client import RawConnection

UNSUPPORTED_VERSION = 35
PARTITIONS = 3
NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_NOT_AVAILABLE = 15
# Ranges Tansu 0.6.0 advertises (measured against the Tansu 0.6.0 binary the harness runs).
TANSU_RANGES = {0: (0, 11), 1: (0, 17), 3: (0, 12), 18: (0, 4), 10: (0, 6)}


def addresses(broker) -> dict[int | None, tuple[str, int]]:
    """Known broker addresses: {node id: (host, port)} for the mock, {None: bootstrap} else."""
    if broker.kind == "mock":
        return dict(broker.brokers)
    host, port = broker.bootstrap.split(",")[0].rsplit(":", 1)
    return {None: (host, int(port))}


def bootstrap(broker) -> RawConnection:
    return RawConnection(*next(iter(addresses(broker).values())))


def api_ranges(broker) -> dict[int, tuple[int, int]]:
    with bootstrap(broker) as conn:
        resp = conn.call(ApiVersionsRequest(), 0)
    assert resp.error_code == 0
    return {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}


def make_topic(broker, partitions: int = PARTITIONS) -> str:
    name = unique_topic("proto")
    if broker.kind == "mock":
        broker.create_topic(name, partitions)
        return name
    req = CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1)],
        timeout_ms=10_000,
    )
    with bootstrap(broker) as conn:
        resp = conn.call(req, 7)
    [result] = resp.topics
    assert (result.name, result.error_code, result.num_partitions) == (name, 0, partitions)
    assert result.topic_id != uuid.UUID(int=0)
    # Apache Kafka answers CreateTopics before every broker's metadata lists the topic.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        [t] = metadata(broker, name).topics
        if t.error_code == 0 and all(p.leader_id >= 0 for p in t.partitions):
            break
        time.sleep(0.05)
    return name


def metadata(broker, topic: str, version: int = 12):
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
    if version < 4:
        return _call(broker, req, version)
    req.allow_auto_topic_creation = False
    return _call(broker, req, version)


def _call(broker, request, version):
    with bootstrap(broker) as conn:
        return conn.call(request, version)


def batch_of(records: list[tuple[bytes, bytes]], first_timestamp: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=first_timestamp + i, key=key, value=value, headers=[])
    return bytes(builder.build())


def read_records(data) -> list[tuple[int, int, bytes, bytes]]:
    """(offset, timestamp, key, value) of every record in a fetched records blob."""
    out = []
    data = bytes(data)
    pos = 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big")
        batch = DefaultRecordBatch(data[pos:pos + 12 + size])
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
        pos += 12 + size
    return out


@pytest.fixture(scope="module")
def ranges_by_kind():
    return {}


@pytest.fixture
def ranges(broker, ranges_by_kind):
    if broker.kind not in ranges_by_kind:
        ranges_by_kind[broker.kind] = api_ranges(broker)
    return ranges_by_kind[broker.kind]


def test_api_versions_v0_and_v3(broker):
    with bootstrap(broker) as conn:
        v0 = conn.call(ApiVersionsRequest(), 0)
        v3 = conn.call(
            ApiVersionsRequest(client_software_name="kafka-fast", client_software_version="0.1"),
            3,
        )
    assert v0.error_code == 0
    ranges0 = {k.api_key: (k.min_version, k.max_version) for k in v0.api_keys}
    # Kafka 4 dropped the oldest versions of some APIs (KIP-896: Fetch starts at v4).
    oldest = 4 if broker.kind in ("kafka", "external") else 0
    for key in (0, 1, 3, 10):
        assert ranges0[key][0] <= oldest and ranges0[key][1] >= 3, (key, ranges0[key])
    assert ranges0[18][0] == 0 and ranges0[18][1] >= 2
    if broker.kind == "tansu":
        assert {k: ranges0[k] for k in TANSU_RANGES} == TANSU_RANGES
    if ranges0[18][1] >= 3:
        # The flexible reply (compact arrays, tagged fields) lists the same ranges.
        assert v3.error_code == 0
        assert {k.api_key: (k.min_version, k.max_version) for k in v3.api_keys} == ranges0
    else:
        # The broker does not do ApiVersions v3: it answers UNSUPPORTED_VERSION.
        assert v3.error_code == UNSUPPORTED_VERSION


@pytest.mark.parametrize("version", [1, 9, 12])
def test_metadata(broker, version):
    topic = make_topic(broker)
    resp = metadata(broker, topic, version)
    known = addresses(broker)
    brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
    if broker.kind == "mock":
        assert brokers == known
    else:
        assert set(brokers.values()) == set(known.values())
    [t] = resp.topics
    assert (t.name, t.error_code) == (topic, 0)
    assert sorted(p.partition_index for p in t.partitions) == list(range(PARTITIONS))
    for p in t.partitions:
        assert p.error_code == 0
        assert p.leader_id in brokers
        assert p.leader_id in p.replica_nodes
        assert p.isr_nodes == p.replica_nodes
    if version >= 10:
        assert t.topic_id != uuid.UUID(int=0)
    if version >= 2:
        assert resp.cluster_id


def _leader(broker, topic: str, partition: int):
    resp = metadata(broker, topic)
    brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
    [t] = resp.topics
    [p] = [p for p in t.partitions if p.partition_index == partition]
    return brokers[p.leader_id], t.topic_id


@pytest.mark.parametrize("produce_version, fetch_version", [(3, 4), (7, 11), (9, 12), (9, 13)])
def test_produce_then_fetch(broker, ranges, produce_version, fetch_version):
    assert produce_version <= ranges[0][1] and fetch_version <= ranges[1][1]
    topic = make_topic(broker)
    partition = 1
    address, topic_id = _leader(broker, topic, partition)
    sent = [
        [(b"k%d" % i, b"value-%d" % i) for i in range(3)],
        [(b"key-%d" % i, b"v" * (100 + i)) for i in range(4)],
    ]
    batches = [batch_of(recs, 1_700_000_000_000 + 1000 * n) for n, recs in enumerate(sent)]
    P = ProduceRequest
    with RawConnection(*address) as conn:
        base_offsets = []
        for batch in batches:
            # Apache Kafka lists a new partition's leader in Metadata a moment before that
            # broker leads it (NOT_LEADER_OR_FOLLOWER meanwhile): retry that, briefly.
            deadline = time.monotonic() + 10
            while True:
                resp = conn.call(P(acks=-1, timeout_ms=10_000, topic_data=[P.TopicProduceData(
                    name=topic,
                    partition_data=[P.PartitionProduceData(index=partition, records=batch)],
                )]), produce_version)
                [t] = resp.responses
                [p] = t.partition_responses
                if p.error_code != NOT_LEADER_OR_FOLLOWER or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert (t.name, p.index, p.error_code) == (topic, partition, 0)
            base_offsets.append(p.base_offset)
        assert base_offsets == [0, 3]

        fetched = []
        first = None
        for _ in range(10):  # the mock cluster returns one batch per fetch
            p = _fetch_partition(conn, fetch_version, topic, topic_id, partition, len(fetched))
            assert p.high_watermark >= 4  # Tansu reports the last batch's base offset + 1
            assert isinstance(p.records, memoryview)
            first = first if first is not None else bytes(p.records)
            fetched += read_records(p.records)
            if len(fetched) >= 7:
                break
    expected = [
        (offset, 1_700_000_000_000 + 1000 * n + i, key, value)
        for offset, (n, i, key, value) in enumerate(
            (n, i, k, v) for n, recs in enumerate(sent) for i, (k, v) in enumerate(recs)
        )
    ]
    assert fetched == expected
    # The first batch comes back byte for byte as it was produced (its base offset was 0).
    assert first[:len(batches[0])] == batches[0]


def _fetch_partition(conn, version, topic, topic_id, partition, offset):
    F = FetchRequest
    fetch = F(
        replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20,
        topics=[F.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
            F.FetchPartition(partition=partition, fetch_offset=offset,
                             partition_max_bytes=1 << 20),
        ])],
    )
    resp = conn.call(fetch, version)
    assert resp.error_code == 0
    [t] = resp.responses
    if version >= 13:
        assert t.topic_id == topic_id
    else:
        assert t.topic == topic
    [p] = t.partitions
    assert (p.partition_index, p.error_code) == (partition, 0)
    return p


def _find_coordinator(broker, request, version):
    """FindCoordinator, asked again while the broker answers COORDINATOR_NOT_AVAILABLE: a fresh
    Apache Kafka creates __consumer_offsets on the first group lookup and answers that until
    the topic has leaders."""
    deadline = time.monotonic() + 30
    while True:
        resp = _call(broker, request, version)
        codes = [c.error_code for c in resp.coordinators] if version >= 4 else [resp.error_code]
        if COORDINATOR_NOT_AVAILABLE not in codes or time.monotonic() > deadline:
            return resp
        time.sleep(0.1)


def test_find_coordinator(broker, ranges):
    known = addresses(broker)
    max_version = ranges[10][1]
    for version in (0, 3):
        resp = _find_coordinator(broker, FindCoordinatorRequest(key="group-a", key_type=0),
                                 version)
        assert resp.error_code == 0
        assert (resp.host, resp.port) in known.values()
        if broker.kind == "mock":
            assert known[resp.node_id] == (resp.host, resp.port)
    if max_version >= 4:
        req = FindCoordinatorRequest(key_type=0, coordinator_keys=["group-a", "group-b"])
        resp = _find_coordinator(broker, req, 4)
        assert [c.key for c in resp.coordinators] == ["group-a", "group-b"]
        for c in resp.coordinators:
            assert c.error_code == 0
            assert (c.host, c.port) in known.values()
