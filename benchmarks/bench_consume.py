"""Consume throughput and client CPU per million records, side by side on one broker.

Clients: kafka_fast ``poll()`` loop, ``consume(10_000)`` and ``consume_batch``; confluent-kafka
``poll()`` and ``consume(10_000)``; aiokafka ``getmany``; kafka-python ``poll``. Each reads the
same N records (value ``--size`` bytes, 10-byte keys) from offset 0 of one topic per codec,
produced beforehand with confluent-kafka. CPU is ``resource.getrusage`` of this process
(every thread, librdkafka's included) over the read; the broker runs in its own process.

    python benchmarks/bench_consume.py                 # starts Tansu, 1M records, none/lz4/zstd
    python benchmarks/bench_consume.py -n 200000 --codecs lz4 --bootstrap 127.0.0.1:9092
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import resource
import statistics
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ALL = ["kafka_fast.poll", "kafka_fast.consume", "kafka_fast.consume_batch",
       "confluent.poll", "confluent.consume", "aiokafka.getmany", "kafka-python.poll"]


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def produce(bootstrap: str, topic: str, partitions: int, n: int, size: int, codec: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                  "linger.ms": 50, "batch.size": 1_000_000, "batch.num.messages": 10_000,
                  "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    value = os.urandom(size // 2).hex().encode()[:size]
    value = value + b"x" * (size - len(value))
    for i in range(n):
        while True:
            try:
                p.produce(topic, value=value, key=b"k%09d" % i, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120) != 0:
        raise RuntimeError("produce did not complete")


def kf_conf(bootstrap: str) -> dict:
    return {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest",
            "enable.auto.commit": False}


def run_kafka_fast(mode: str, bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from kafka_fast import Consumer, TopicPartition

    c = Consumer(kf_conf(bootstrap))
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    nbytes = 0
    try:
        if mode == "poll":
            while got < n:
                m = c.poll(5.0)
                if m is None:
                    break
                if m.error() is None:
                    nbytes += len(m.value())
                    got += 1
        elif mode == "consume":
            while got < n:
                msgs = c.consume(10_000, 5.0)
                if not msgs:
                    break
                for m in msgs:
                    if m.error() is None:
                        nbytes += len(m.value())
                        got += 1
        else:
            while got < n:
                view = c.consume_batch(100_000, 5.0)
                if not len(view):
                    break
                nbytes += int(view.values.offsets[-1])
                got += len(view)
    finally:
        c.close()
    return got


def run_confluent(mode: str, bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    nbytes = 0
    try:
        if mode == "poll":
            while got < n:
                m = c.poll(5.0)
                if m is None:
                    break
                if m.error() is None:
                    nbytes += len(m.value())
                    got += 1
        else:
            while got < n:
                msgs = c.consume(10_000, 5.0)
                if not msgs:
                    break
                for m in msgs:
                    if m.error() is None:
                        nbytes += len(m.value())
                        got += 1
    finally:
        c.close()
    return got


def run_aiokafka(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> int:
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest", max_partition_fetch_bytes=1 << 20)
        await c.start()
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)
        got = 0
        try:
            while got < n:
                batches = await c.getmany(timeout_ms=5000, max_records=10_000)
                if not batches:
                    break
                for msgs in batches.values():
                    for m in msgs:
                        _ = len(m.value)
                        got += 1
        finally:
            await c.stop()
        return got

    return asyncio.run(main())


def run_kafka_python(bootstrap: str, topic: str, partitions: int, n: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    for tp in tps:
        c.seek(tp, 0)
    got = 0
    try:
        while got < n:
            batches = c.poll(timeout_ms=5000, max_records=10_000)
            if not batches:
                break
            for msgs in batches.values():
                for m in msgs:
                    _ = len(m.value)
                    got += 1
    finally:
        c.close()
    return got


def run(client: str, bootstrap: str, topic: str, partitions: int, n: int) -> int:
    lib, mode = client.split(".")
    if lib == "kafka_fast":
        return run_kafka_fast(mode, bootstrap, topic, partitions, n)
    if lib == "confluent":
        return run_confluent(mode, bootstrap, topic, partitions, n)
    if lib == "aiokafka":
        return run_aiokafka(bootstrap, topic, partitions, n)
    return run_kafka_python(bootstrap, topic, partitions, n)


def measure(client, bootstrap, topic, partitions, n, size, repeat):
    rows = []
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), cpu_seconds()
        try:
            got = run(client, bootstrap, topic, partitions, n)
        except Exception as exc:  # noqa: BLE001 - one client failing does not stop the table
            return {"client": client, "error": f"{type(exc).__name__}: {exc}"[:120]}
        wall, cpu = time.perf_counter() - w0, cpu_seconds() - c0
        if got < n:
            return {"client": client, "error": f"read {got} of {n}"}
        rows.append((wall, cpu))
    wall = statistics.median(r[0] for r in rows)
    cpu = statistics.median(r[1] for r in rows)
    return {"client": client, "rps": n / wall, "mbps": n * size / wall / 1e6,
            "cpu_per_m": cpu / n * 1e6, "wall": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", help="broker to use (default: start Tansu)")
    ap.add_argument("-n", type=int, default=1_000_000, help="records per codec")
    ap.add_argument("--size", type=int, default=100, help="value bytes")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--codecs", default="none,lz4,zstd")
    ap.add_argument("--clients", default=",".join(ALL))
    ap.add_argument("--repeat", type=int, default=1, help="runs per client (median)")
    args = ap.parse_args()

    broker = None
    bootstrap = args.bootstrap
    if not bootstrap:
        from kafka_fast.embedded import EmbeddedBroker

        broker = EmbeddedBroker().start()
        bootstrap = broker.bootstrap
    try:
        print(f"# {args.n} records of {args.size} bytes, {args.partitions} partition(s), "
              f"broker {'Tansu (embedded)' if broker else bootstrap}, {os.cpu_count()} CPUs")
        for codec in args.codecs.split(","):
            topic = f"bench-consume-{codec}-{uuid.uuid4().hex[:8]}"
            produce(bootstrap, topic, args.partitions, args.n, args.size, codec)
            results = [measure(c, bootstrap, topic, args.partitions, args.n, args.size,
                               args.repeat) for c in args.clients.split(",")]
            ref = next((r for r in results if r["client"] == "confluent.consume"
                        and "rps" in r), None)
            print(f"\n## codec {codec}\n")
            print("| client | records/s | MB/s | CPU s per M | x confluent consume (rec/s) "
                  "| CPU vs confluent consume |")
            print("|---|---:|---:|---:|---:|---:|")
            for r in results:
                if "error" in r:
                    print(f"| {r['client']} | {r['error']} | | | | |")
                    continue
                ratio = f"{r['rps'] / ref['rps']:.2f}x" if ref else "-"
                cpu_ratio = f"{r['cpu_per_m'] / ref['cpu_per_m']:.2f}" if ref else "-"
                print(f"| {r['client']} | {r['rps']:,.0f} | {r['mbps']:.1f} | "
                      f"{r['cpu_per_m']:.2f} | {ratio} | {cpu_ratio} |")
            sys.stdout.flush()
    finally:
        if broker is not None:
            broker.__exit__(None, None, None)


if __name__ == "__main__":
    main()
