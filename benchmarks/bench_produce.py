"""Produce throughput and client CPU: kafka_fast against confluent-kafka, aiokafka, kafka-python.

Cases (``--clients``): kafka_fast.produce, kafka_fast.produce_batch, confluent.produce,
confluent.produce_batch, aiokafka.send, kafka-python.send; on request also
kafka_fast.produce_cb and confluent.produce_cb (the produce() loops with a delivery callback
per record). Every case runs in a fresh process on the same broker (an embedded Tansu unless
--bootstrap is given; --broker mock uses librdkafka's mock cluster from the test harness) and
writes N records (--size-byte values, --key-size-byte keys) into a fresh topic, timed from the
first produce call until every record is acknowledged. Client CPU is the process's
user+system time (every thread, librdkafka's included); broker CPU comes from /proc.

    .venv/bin/python benchmarks/bench_produce.py                  # Tansu, full matrix, N=300k
    .venv/bin/python benchmarks/bench_produce.py -n 1000000 --acks all --codecs lz4
    .venv/bin/python benchmarks/bench_produce.py --broker mock \\
        --clients kafka_fast.produce,confluent.produce
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kafka_fast.bench.command import Broker, given_or_embedded, parse_args, parser, run  # noqa: E402


@contextmanager
def mock_cluster() -> Iterator[Broker]:
    """librdkafka's 3-broker mock cluster, started by the test harness."""
    # Appended so that nothing under tests/ shadows an installed package.
    sys.path.append(os.path.join(ROOT, "tests"))
    from harness.mock_cluster import start_mock_cluster

    cluster = start_mock_cluster()

    def create_topic(name: str, partitions: int) -> None:
        cluster.create_topic(name, partitions, 1)
        time.sleep(0.2)  # let the new topic reach every mock broker's metadata

    try:
        yield Broker(cluster.bootstrap, cluster.pid, create_topic, "librdkafka mock cluster")
    finally:
        cluster.stop()


def main() -> int:
    ap = parser(__doc__, "produce", records=300_000, partitions=6)
    ap.add_argument("--acks", default="1,all", help="comma-separated: one table per value")
    ap.add_argument("--broker", choices=("tansu", "mock"), default="tansu",
                    help="what to start when no --bootstrap is given")
    args = parse_args(ap, "produce")
    acks = [a.strip() for a in args.acks.split(",") if a.strip()]
    if not acks or any(a not in ("0", "1", "all") for a in acks):
        ap.error("--acks: comma-separated 0, 1 or all")
    mock = args.broker == "mock" and not args.bootstrap
    if mock and "kafka-python.send" in args.cases:
        # kafka-python cannot bootstrap against the mock cluster.
        args.cases.remove("kafka-python.send")
        print("skipped kafka-python.send: it cannot bootstrap against the mock cluster",
              file=sys.stderr)
    with mock_cluster() if mock else given_or_embedded(args.bootstrap) as broker:
        return run(args, "produce", broker, acks)


if __name__ == "__main__":
    sys.exit(main())
