"""Request throughput of one broker connection: Metadata requests/s with max.in.flight 1 vs 5.

All requests go to one broker over one connection; the client keeps up to
``max.in.flight.requests.per.connection`` of them outstanding and queues the rest. CPU is
``resource.getrusage`` of this process (the broker runs in its own process).

    python benchmarks/bench_net.py                      # starts Tansu
    python benchmarks/bench_net.py --bootstrap 127.0.0.1:9092 -n 20000 --windows 1,5,20
    python benchmarks/bench_net.py --mock-rtt 5 -n 1000   # librdkafka's mock, 5 ms RTT
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run(bootstrap: str, window: int, n: int, topics: list[str] | None) -> tuple[float, float]:
    """Seconds and CPU seconds for ``n`` Metadata round trips with ``window`` in flight."""
    from kafka_fast.config import make_config
    from kafka_fast.net.client import KafkaClient
    from kafka_fast.protocol.messages import MetadataRequest

    conf = make_config({"bootstrap.servers": bootstrap,
                        "max.in.flight.requests.per.connection": window}, "admin")
    with KafkaClient(conf) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        wanted = None if topics is None else [
            MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        client.send(node, MetadataRequest(topics=wanted)).result(10)
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        futures = [client.send(node, MetadataRequest(topics=wanted), timeout_ms=120_000)
                   for _ in range(n)]
        for fut in futures:
            fut.result(120)
        return time.perf_counter() - t0, cpu_seconds() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", help="an existing broker (default: start Tansu)")
    ap.add_argument("-n", type=int, default=5000, help="requests per run")
    ap.add_argument("--windows", default="1,5", help="max.in.flight values to compare")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mock-rtt", type=int, default=None, metavar="MS",
                    help="use librdkafka's mock cluster with this broker RTT instead of Tansu")
    ap.add_argument("--brokers-only", action="store_true",
                    help="ask for no topics (smallest response)")
    args = ap.parse_args()

    broker = None
    bootstrap = args.bootstrap
    if bootstrap is None and args.mock_rtt is not None:
        from harness.mock_cluster import start_mock_cluster
        broker = start_mock_cluster(broker_count=1)
        broker.set_rtt(-1, args.mock_rtt)
        bootstrap = broker.bootstrap
    elif bootstrap is None:
        from harness.tansu import start_tansu
        broker = start_tansu()
        bootstrap = broker.bootstrap
    try:
        topics = [] if args.brokers_only else None
        print(f"{'max.in.flight':>13} {'requests/s':>11} {'us CPU/req':>11}  (median of "
              f"{args.repeat} runs of {args.n} Metadata requests, {bootstrap})")
        base = None
        for window in [int(w) for w in args.windows.split(",")]:
            runs = [run(bootstrap, window, args.n, topics) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            rate = args.n / wall
            base = base or rate
            print(f"{window:>13} {rate:>11,.0f} {cpu / args.n * 1e6:>11.1f}  x{rate / base:.2f}")
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
