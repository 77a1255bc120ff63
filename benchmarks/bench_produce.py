"""Produce throughput and client CPU: kafka_fast against confluent-kafka, aiokafka, kafka-python.

Every case runs in a fresh subprocess on the same broker (Tansu started here unless
``--bootstrap`` is given; ``--broker mock`` uses librdkafka's mock cluster from the test
harness) and writes to a fresh topic: N records of 100-byte values and 10-byte keys, timed from
the first produce call until every record is acknowledged. Client CPU is the subprocess's
user+system time (all of its threads, librdkafka's included); broker CPU is read from /proc.

    .venv/bin/python benchmarks/bench_produce.py                 # Tansu, default matrix
    .venv/bin/python benchmarks/bench_produce.py -n 1000000 --acks all --codecs lz4
    .venv/bin/python benchmarks/bench_produce.py --broker mock --clients kf_produce,ck_produce
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
# The test harness (mock cluster launcher) is imported from tests/; appended so that nothing
# there shadows an installed package.
sys.path.append(os.path.join(ROOT, "tests"))

VALUE_SIZE = 100
KEY_SIZE = 10
PARTITIONS = 6
CLIENTS = ["kf_produce", "kf_batch", "ck_produce", "ck_batch", "aiokafka", "kafka_python"]
#: Also available: the produce() loops with a delivery callback per record.
EXTRA_CLIENTS = ["kf_produce_cb", "ck_produce_cb"]


# -- data -----------------------------------------------------------------------------------
def _data(n: int):
    """N distinct 10-byte keys; values cycle through 1,000 distinct 100-byte strings."""
    import numpy as np

    rng = np.random.default_rng(42)
    pool = rng.integers(0, 256, size=(1000, VALUE_SIZE), dtype=np.uint8)
    keys = [b"%010d" % i for i in range(n)]
    values = [pool[i % 1000].tobytes() for i in range(n)]
    return keys, values


# -- the clients (each runs in its own process) ------------------------------------------------
def _counter():
    done = [0]

    def on_delivery(err, msg):
        done[0] += 1

    return on_delivery


def run_kf(bootstrap, topic, n, acks, codec, batch: bool, callbacks: bool = False):
    import numpy as np

    from kafka_fast import Producer

    keys, values = _data(n)
    conf = {"bootstrap.servers": bootstrap, "acks": acks, "compression.type": codec,
            "linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 4_000_000}
    p = Producer(conf)
    p.list_topics(topic, 10)
    if batch:
        vcol = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(n, VALUE_SIZE)
        kcol = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(n, KEY_SIZE)
        del keys, values
    start = _clock()
    if batch:
        step = 250_000
        for i in range(0, n, step):
            p.produce_batch(topic, vcol[i:i + step], kcol[i:i + step])
    else:
        produce = p.produce
        poll = p.poll
        cb = _counter() if callbacks else None
        for i in range(n):
            produce(topic, values[i], keys[i], on_delivery=cb)
            if not i & 0x3FFF:
                poll(0)
    left = p.flush(120)
    result = _stop(start, n, left)
    p.close()
    return result


def run_ck(bootstrap, topic, n, acks, codec, batch: bool, callbacks: bool = False):
    from confluent_kafka import Producer

    keys, values = _data(n)
    conf = {"bootstrap.servers": bootstrap, "acks": acks, "compression.type": codec,
            "linger.ms": 5, "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 4_000_000, "batch.size": 1_000_000}
    p = Producer(conf)
    p.list_topics(topic, 10)
    if batch:
        messages = [{"value": values[i], "key": keys[i]} for i in range(n)]
        del keys, values
    start = _clock()
    if batch:
        step = 10_000
        for i in range(0, n, step):
            chunk = messages[i:i + step]
            while True:
                done = p.produce_batch(topic, chunk)
                if done == len(chunk):
                    break
                chunk = [m for m in chunk if "_error" in m]
                for m in chunk:
                    del m["_error"]
                p.poll(0.005)
            p.poll(0)
    else:
        produce = p.produce
        poll = p.poll
        cb = _counter() if callbacks else None
        for i in range(n):
            try:
                produce(topic, values[i], keys[i], on_delivery=cb)
            except BufferError:
                poll(0.01)
                produce(topic, values[i], keys[i], on_delivery=cb)
            if not i & 0x3FFF:
                poll(0)
    left = p.flush(120)
    return _stop(start, n, left)


def run_aiokafka(bootstrap, topic, n, acks, codec):
    import asyncio

    from aiokafka import AIOKafkaProducer

    keys, values = _data(n)

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1 if acks == "1" else "all",
                             compression_type=None if codec == "none" else codec,
                             linger_ms=5, max_batch_size=1_000_000,
                             enable_idempotence=False)
        await p.start()
        await p.partitions_for(topic)
        start = _clock()
        futs = []
        for i in range(n):
            futs.append(await p.send(topic, values[i], key=keys[i]))
        await asyncio.gather(*futs)
        result = _stop(start, n, 0)
        await p.stop()
        return result

    return asyncio.run(main())


def run_kafka_python(bootstrap, topic, n, acks, codec):
    from kafka import KafkaProducer

    keys, values = _data(n)
    p = KafkaProducer(bootstrap_servers=bootstrap, acks=1 if acks == "1" else "all",
                      compression_type=None if codec == "none" else codec, linger_ms=5,
                      batch_size=1_000_000)
    p.partitions_for(topic)
    start = _clock()
    for i in range(n):
        p.send(topic, values[i], key=keys[i])
    p.flush(120)
    result = _stop(start, n, 0)
    p.close()
    return result


def _clock():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), ru.ru_utime + ru.ru_stime


def _stop(start, n, left):
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"wall": time.perf_counter() - start[0],
            "cpu": ru.ru_utime + ru.ru_stime - start[1], "n": n, "left": left}


def worker(args) -> None:
    client = args.worker
    common = (args.bootstrap, args.topic, args.n, args.acks, args.codec)
    if client in ("kf_produce", "kf_batch", "kf_produce_cb"):
        out = run_kf(*common, batch=client == "kf_batch", callbacks=client.endswith("_cb"))
    elif client in ("ck_produce", "ck_batch", "ck_produce_cb"):
        out = run_ck(*common, batch=client == "ck_batch", callbacks=client.endswith("_cb"))
    elif client == "aiokafka":
        out = run_aiokafka(*common)
    else:
        out = run_kafka_python(*common)
    print("RESULT " + json.dumps(out), flush=True)


# -- the driver ---------------------------------------------------------------------------------
def _proc_cpu(pid: int | None) -> float:
    if not pid:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


class Cluster:
    """The broker under test: given, Tansu started here, or the mock cluster."""

    def __init__(self, kind: str, bootstrap: str | None) -> None:
        self.kind = kind
        self._owned = None
        self.pid = None
        if bootstrap:
            self.bootstrap = bootstrap
        elif kind == "mock":
            from harness.mock_cluster import start_mock_cluster

            self._owned = start_mock_cluster()
            self.bootstrap = self._owned.bootstrap
            self.pid = self._owned.pid
        else:
            from kafka_fast.embedded import EmbeddedBroker

            self._owned = EmbeddedBroker().start()
            self.bootstrap = self._owned.bootstrap
            self.pid = self._owned.pid

    def create_topic(self, name: str) -> None:
        if self.kind == "mock" and self._owned is not None:
            self._owned.create_topic(name, PARTITIONS, 1)
            time.sleep(0.2)
            return
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(20)

    def stop(self) -> None:
        if self._owned is not None:
            self._owned.stop()


def run_case(cluster: Cluster, client: str, n: int, acks: str, codec: str) -> dict | None:
    topic = f"bench-{client}-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", client, "--bootstrap",
           cluster.bootstrap, "--topic", topic, "-n", str(n), "--acks", acks, "--codec", codec]
    broker_cpu = _proc_cpu(cluster.pid)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    broker_cpu = _proc_cpu(cluster.pid) - broker_cpu
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            out = json.loads(line[7:])
            out["broker_cpu"] = broker_cpu
            return out
    sys.stderr.write(f"{client} {acks} {codec} failed:\n{proc.stdout[-2000:]}"
                     f"{proc.stderr[-3000:]}\n")
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bootstrap", help="an existing cluster (default: start Tansu)")
    ap.add_argument("--broker", choices=("tansu", "mock"), default="tansu")
    ap.add_argument("-n", type=int, default=300_000, help="records per case")
    ap.add_argument("--acks", default="1,all")
    ap.add_argument("--codecs", default="none,lz4,zstd")
    ap.add_argument("--clients", default=",".join(CLIENTS),
                    help=f"any of {', '.join(CLIENTS + EXTRA_CLIENTS)}")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case (best kept)")
    ap.add_argument("--json", help="also write the raw results here")
    # worker mode
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--topic", help=argparse.SUPPRESS)
    ap.add_argument("--codec", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    clients = args.clients.split(",")
    if args.broker == "mock" and "kafka_python" in clients:
        clients.remove("kafka_python")  # kafka-python cannot bootstrap against the mock
    cluster = Cluster(args.broker, args.bootstrap)
    rows = []
    try:
        for acks in args.acks.split(","):
            for codec in args.codecs.split(","):
                base = None
                for client in clients:
                    best = None
                    for _ in range(args.repeat):
                        out = run_case(cluster, client, args.n, acks, codec)
                        if out and (best is None or out["wall"] < best["wall"]):
                            best = out
                    if best is None:
                        continue
                    rate = best["n"] / best["wall"]
                    if client == "ck_produce":
                        base = rate
                    row = {"broker": cluster.kind, "acks": acks, "codec": codec,
                           "client": client, "rate": rate,
                           "mb_s": rate * (VALUE_SIZE + KEY_SIZE) / 1e6,
                           "cpu_per_m": best["cpu"] / best["n"] * 1e6,
                           "client_cores": best["cpu"] / best["wall"],
                           "broker_cores": best["broker_cpu"] / best["wall"],
                           "left": best["left"]}
                    rows.append(row)
                    print(_fmt(row, base), flush=True)
                for row in rows:
                    if row["acks"] == acks and row["codec"] == codec and base:
                        row["ratio"] = row["rate"] / base
    finally:
        cluster.stop()
    print()
    print(table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


def _fmt(row: dict, base: float | None) -> str:
    ratio = f"{row['rate'] / base:5.2f}x" if base else "   - "
    return (f"{row['broker']:5} acks={row['acks']:3} {row['codec']:5} {row['client']:12} "
            f"{row['rate']:>10,.0f} rec/s {row['mb_s']:7.1f} MB/s {ratio} "
            f"cpu {row['cpu_per_m']:6.2f} s/M  client {row['client_cores']:.2f} cores  "
            f"broker {row['broker_cores']:.2f} cores")


def table(rows: list[dict]) -> str:
    """A markdown table of the results."""
    lines = ["| broker | acks | codec | client | records/s | MB/s | vs confluent produce() "
             "| client CPU s / M records | client cores | broker cores |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") else "-"
        lines.append(f"| {r['broker']} | {r['acks']} | {r['codec']} | {r['client']} | "
                     f"{r['rate']:,.0f} | {r['mb_s']:.1f} | {ratio} | {r['cpu_per_m']:.2f} | "
                     f"{r['client_cores']:.2f} | {r['broker_cores']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
