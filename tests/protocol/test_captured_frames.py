"""Reply frames captured from Tansu and librdkafka's mock cluster, decoded offline.

The frames and what they must contain come from capture_frames.py (see its docstring).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from kafka_fast.protocol import by_name, decode_response, headers

DATA = Path(__file__).resolve().parent / "data"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def _decode(name: str):
    facts = EXPECTED[name]
    frame = (DATA / f"{name}.bin").read_bytes()
    cls = by_name(f"{facts['api']}Response")
    correlation_id, resp = decode_response(frame, cls, facts["version"])
    assert correlation_id == facts["correlation_id"]
    return facts, frame, resp


def test_all_frames_are_checked():
    assert sorted(EXPECTED) == sorted(p.stem for p in DATA.glob("*.bin"))
    assert len(EXPECTED) == 7


@pytest.mark.parametrize("name", ["tansu_api_versions_v3", "mock_api_versions_v3"])
def test_api_versions(name):
    facts, _, resp = _decode(name)
    assert resp.error_code == facts["error_code"]
    if "ranges" in facts:
        ranges = {k.api_key: [k.min_version, k.max_version] for k in resp.api_keys}
        assert {str(k): v for k, v in ranges.items() if str(k) in facts["ranges"]} == facts["ranges"]


@pytest.mark.parametrize("name", ["tansu_metadata_v12", "mock_metadata_v12"])
def test_metadata(name):
    facts, frame, resp = _decode(name)
    assert sorted([b.host, b.port] for b in resp.brokers) == sorted(facts["brokers"])
    [topic] = resp.topics
    assert (topic.name, topic.error_code) == (facts["topic"], 0)
    assert sorted(p.partition_index for p in topic.partitions) == list(range(facts["partitions"]))
    node_ids = {b.node_id for b in resp.brokers}
    assert all(p.leader_id in node_ids for p in topic.partitions)
    if name.startswith("mock"):
        # The mock sends one byte past the end of flexible Metadata bodies: ignored.
        cls = by_name("MetadataResponse")
        offset = headers.decode_response_header(frame, 1)[1]
        _, end = cls.decode_from(frame, 12, offset)
        assert len(frame) - end == 1


def test_produce():
    facts, _, resp = _decode("tansu_produce_v9")
    [t] = resp.responses
    [p] = t.partition_responses
    assert (t.name, p.index, p.error_code, p.base_offset) == (
        facts["topic"], facts["partition"], 0, facts["base_offset"])


def test_fetch_records_are_the_produced_batch():
    facts, frame, resp = _decode("tansu_fetch_v12")
    [t] = resp.responses
    [p] = t.partitions
    assert (t.topic, p.partition_index, p.error_code) == (facts["topic"], facts["partition"], 0)
    assert isinstance(p.records, memoryview) and p.records.obj is frame
    assert p.records.hex() == facts["records"]
    batch = DefaultRecordBatch(bytes(p.records))
    assert [(r.offset, r.key, r.value) for r in batch] == [
        (i, b"key-%d" % i, b"value-%d" % i) for i in range(3)]


def test_find_coordinator():
    facts, _, resp = _decode("tansu_find_coordinator_v4")
    assert [c.key for c in resp.coordinators] == facts["keys"]
    for c in resp.coordinators:
        assert (c.error_code, [c.host, c.port]) == (0, facts["address"])
