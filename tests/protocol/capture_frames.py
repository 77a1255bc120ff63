"""Capture response frames from real brokers into tests/protocol/data/ (run by hand).

Usage (from the repository root): .venv/bin/python -m tests.protocol.capture_frames

Starts Tansu and librdkafka's mock cluster through the test harness, sends requests built
with the codec, and stores each reply frame (without its size prefix) with what it must
contain, taken from outside the codec: the harness's broker addresses, the topic we created,
the record batch kafka-python built, the ranges TEST-PEERS.md lists for Tansu.
test_captured_frames.py decodes them offline.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def main() -> None:
    sys.path.insert(0, str(HERE.parent))
    from harness.mock_cluster import start_mock_cluster
    from harness.tansu import start_tansu

    from kafka_fast.protocol.messages import (
        ApiVersionsRequest,
        FetchRequest,
        FindCoordinatorRequest,
        MetadataRequest,
        ProduceRequest,
    )
    from tests.protocol.raw_client import RawConnection
    from tests.protocol.test_real_brokers import TANSU_RANGES, batch_of, make_topic

    DATA.mkdir(exist_ok=True)
    expected: dict[str, dict] = {}

    def save(name: str, conn: RawConnection, api: str, version: int, facts: dict) -> None:
        (DATA / f"{name}.bin").write_bytes(conn.last_frame)
        expected[name] = {"api": api, "version": version,
                          "correlation_id": conn.correlation_id, **facts}

    work = Path(tempfile.mkdtemp(prefix="capture-"))
    tansu = start_tansu(work)
    mock = start_mock_cluster(work)
    try:
        host, port = tansu.bootstrap.rsplit(":", 1)
        address = [host, int(port)]
        topic = make_topic(tansu)
        batch = batch_of([(b"key-%d" % i, b"value-%d" % i) for i in range(3)], 1_700_000_000_000)
        P, F = ProduceRequest, FetchRequest
        with RawConnection(host, int(port)) as conn:
            conn.call(ApiVersionsRequest(client_software_name="kafka-fast",
                                         client_software_version="0.1"), 3)
            save("tansu_api_versions_v3", conn, "ApiVersions", 3, {
                "error_code": 0, "ranges": {str(k): list(v) for k, v in TANSU_RANGES.items()}})
            conn.call(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)]), 12)
            save("tansu_metadata_v12", conn, "Metadata", 12, {
                "brokers": [address], "topic": topic, "partitions": 3})
            conn.call(P(acks=-1, timeout_ms=10_000, topic_data=[P.TopicProduceData(
                name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]), 9)
            save("tansu_produce_v9", conn, "Produce", 9, {
                "topic": topic, "partition": 0, "base_offset": 0})
            conn.call(F(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, topics=[
                F.FetchTopic(topic=topic, partitions=[F.FetchPartition(
                    partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12)
            save("tansu_fetch_v12", conn, "Fetch", 12, {
                "topic": topic, "partition": 0, "records": batch.hex()})
            conn.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]), 4)
            save("tansu_find_coordinator_v4", conn, "FindCoordinator", 4, {
                "keys": ["g1", "g2"], "address": address})

        mock_topic = make_topic(mock)
        first = sorted(mock.brokers)[0]
        with RawConnection(*mock.brokers[first]) as conn:
            conn.call(ApiVersionsRequest(), 3)
            save("mock_api_versions_v3", conn, "ApiVersions", 3, {"error_code": 35})
            conn.call(MetadataRequest(
                topics=[MetadataRequest.MetadataRequestTopic(name=mock_topic)]), 12)
            save("mock_metadata_v12", conn, "Metadata", 12, {
                "brokers": [[h, p] for _, (h, p) in sorted(mock.brokers.items())],
                "topic": mock_topic, "partitions": 3})
    finally:
        mock.stop()
        tansu.stop()
    (DATA / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(expected)} frames to {DATA}")


if __name__ == "__main__":
    main()
