"""Protocol codec hot paths: ProduceRequest encode and FetchResponse decode, µs per call.

Usage: python benchmarks/bench_protocol.py [--partitions N] [--record-bytes B]
"""

from __future__ import annotations

import argparse
import time
import timeit

from kafka_fast.protocol import frame_request
from kafka_fast.protocol.messages import FetchResponse, ProduceRequest


def produce_request(partitions: int, record_bytes: int) -> ProduceRequest:
    P = ProduceRequest
    blob = b"x" * record_bytes
    return P(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[P.TopicProduceData(
            name="benchmark-topic",
            partition_data=[P.PartitionProduceData(index=i, records=blob) for i in range(partitions)],
        )],
    )


def fetch_response_bytes(partitions: int, record_bytes: int, version: int) -> bytes:
    F = FetchResponse
    T = F.FetchableTopicResponse
    blob = b"x" * record_bytes
    resp = F(
        responses=[T(
            topic="benchmark-topic",
            partitions=[T.PartitionData(
                partition_index=i, high_watermark=1_000_000 + i, last_stable_offset=1_000_000 + i,
                log_start_offset=0, records=blob,
            ) for i in range(partitions)],
        )],
    )
    return resp.encode(version)


def measure(fn, number: int) -> float:
    """Best of 9 runs, in CPU µs per call (the machines are shared: CPU time is steadier)."""
    runs = timeit.repeat(fn, number=number, repeat=9, timer=time.process_time)
    return min(runs) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--record-bytes", type=int, default=16_384)
    args = parser.parse_args()
    n, size = args.partitions, args.record_bytes
    print(f"{n} partitions, {size}-byte records blobs")

    for version in (3, 9, 11):
        req = produce_request(n, size)
        us = measure(lambda req=req, v=version: frame_request(req, v, 1, "bench"), 2000)
        print(f"  ProduceRequest v{version:<2} frame_request (chunks) {us:8.2f} µs")
    for version in (3, 9):
        us = measure(lambda v=version: produce_request(n, size).encode_chunks(v), 2000)
        print(f"  ProduceRequest v{version:<2} build + encode_chunks   {us:8.2f} µs")
    for version in (4, 11, 12, 16):
        data = fetch_response_bytes(n, size, version)
        us = measure(lambda d=data, v=version: FetchResponse.decode(d, v), 2000)
        print(f"  FetchResponse  v{version:<2} decode                  {us:8.2f} µs")
    compare_kafka_python(n, size)


def compare_kafka_python(n: int, size: int) -> None:
    """The same work with kafka-python 3's schema-driven protocol classes, for reference."""
    import warnings

    warnings.simplefilter("ignore")
    try:
        from kafka.protocol.consumer.fetch import FetchResponse as KFetchResponse
        from kafka.protocol.producer.produce import ProduceRequest as KProduceRequest
    except ImportError:
        return
    print("kafka-python (reference):")
    for version in (3, 9):
        data = produce_request(n, size).encode(version)
        theirs = KProduceRequest.decode(data, version=version)
        theirs._header = None
        us = measure(lambda t=theirs, v=version: t.encode(version=v), 500)
        print(f"  ProduceRequest v{version:<2} encode                  {us:8.2f} µs")
    for version in (4, 12):
        data = fetch_response_bytes(n, size, version)
        us = measure(lambda d=data, v=version: KFetchResponse.decode(d, version=v), 500)
        print(f"  FetchResponse  v{version:<2} decode                  {us:8.2f} µs")


if __name__ == "__main__":
    main()
