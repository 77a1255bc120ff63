"""Produce throughput and client CPU: kafka_fast against confluent-kafka, aiokafka, kafka-python.

Cases (``--clients``): kafka_fast.produce, kafka_fast.produce_batch, confluent.produce,
confluent.produce_batch, kafka_fast.aio_produce, confluent.aio_produce, aiokafka.send,
asyncio.futures (asyncio's own cost per record, no client: the floor of the asyncio rows),
kafka-python.send; on request also
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.brokers import KINDS, broker_for  # noqa: E402
from benchmarks.command import parse_args, parser, run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "produce", records=300_000, partitions=6)
    ap.add_argument("--acks", default="1,all", help="comma-separated: one table per value")
    ap.add_argument("--broker", choices=KINDS, default="tansu",
                    help="what to start when no --bootstrap is given")
    args = parse_args(ap, "produce", argv)
    acks = [a.strip() for a in args.acks.split(",") if a.strip()]
    if not acks or any(a not in ("0", "1", "all") for a in acks):
        ap.error("--acks: comma-separated 0, 1 or all")
    mock = args.broker == "mock" and not args.bootstrap
    if mock and "kafka-python.send" in args.cases:
        # kafka-python cannot bootstrap against the mock cluster.
        args.cases.remove("kafka-python.send")
        print("skipped kafka-python.send: it cannot bootstrap against the mock cluster",
              file=sys.stderr)
    with broker_for(args.bootstrap, args.broker) as broker:
        return run(args, "produce", broker, acks)


if __name__ == "__main__":
    sys.exit(main())
