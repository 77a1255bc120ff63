"""Consume throughput and client CPU per million records, side by side on one broker.

Cases (``--clients``): kafka_fast.poll, kafka_fast.consume (10,000 per call),
kafka_fast.consume_batch; confluent.poll, confluent.consume (10,000 per call);
aiokafka.getmany; kafka-python.poll. Per codec, kafka_fast's produce_batch first fills one
topic with N records (--size-byte values, --key-size-byte keys); every case then reads all of
them from the beginning, each in a fresh process. The broker is an embedded Tansu unless
--bootstrap is given. Client CPU is the reading process's user+system time (every thread,
librdkafka's included); broker CPU comes from /proc when the broker was started here.

    .venv/bin/python benchmarks/bench_consume.py                  # 1M records, none/lz4/zstd
    .venv/bin/python benchmarks/bench_consume.py -n 200000 --codecs lz4 --repeat 3
    .venv/bin/python benchmarks/bench_consume.py --bootstrap 127.0.0.1:9092
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.brokers import KINDS, broker_for
from benchmarks.command import parse_args, parser, run


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "consume", records=1_000_000, partitions=1)
    ap.add_argument("--broker", choices=KINDS, default="tansu",
                    help="what to start when no --bootstrap is given")
    args = parse_args(ap, "consume", argv)
    with broker_for(args.bootstrap, args.broker) as broker:
        return run(args, "consume", broker)


if __name__ == "__main__":
    sys.exit(main())
