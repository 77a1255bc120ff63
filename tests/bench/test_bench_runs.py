"""How the benchmark scripts run their cases: every case under a time bound (past it the
case's process and any process it started are killed, the case is stored and shown as timed
out, and the run goes on), slow peers with fewer records, the quiet-table command's steps; and
the Java client's consumer tool ends with a figure on Tansu; a topic the benchmarks make takes
writes on every partition at once. (No timing is asserted.)"""

from __future__ import annotations

import importlib.util
import os
import time
import uuid
from pathlib import Path

import pytest

from kafka_fast.bench import java, store
from kafka_fast.bench.payload import Payload

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _workers() -> list[int]:
    """Live processes running a benchmark case that this test process started."""
    found = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"kafka_fast.bench.worker" in cmd and ppid == os.getpid():
            found.append(pid)
    return found


def test_a_case_past_its_bound_is_stored_and_shown_as_timed_out(tansu, tmp_path):
    bench_produce = _load("bench_produce", ROOT / "benchmarks" / "bench_produce.py")
    bench_report = _load("bench_report", ROOT / "tools" / "bench_report.py")
    # 2M records cannot be made, sent and acknowledged within half a second; three runs
    # asked for, one made: the next case starts as soon as the bound has passed.
    status = bench_produce.main([
        "--bootstrap", tansu.bootstrap, "-n", "2000000", "--codecs", "none", "--acks", "1",
        "--clients", "kafka_fast.produce,confluent.produce", "--repeat", "3",
        "--case-timeout", "0.5", "--results", str(tmp_path)])
    assert status == 1  # a kafka_fast case did not finish
    assert _workers() == []  # killed and reaped
    (run,) = store.load(tmp_path / "produce.jsonl")
    assert run["settings"]["case_timeout_s"] == 0.5
    assert [(r["client"], r["path"], r["timed_out"], r["error"], r["records"])
            for r in run["results"]] == [
        ("kafka_fast", "produce()", True, "after 0.5 s (the per-case bound)", 0),
        ("confluent", "produce()", True, "after 0.5 s (the per-case bound)", 0)]
    text = bench_report.update(f"<!-- bench: produce broker={tansu.bootstrap} -->\n"
                               "<!-- /bench -->\n", tmp_path)
    rows = [line for line in text.split("```")[1].splitlines() if line.startswith("produce ")]
    assert len(rows) == 2
    assert all(row.endswith("TIMED OUT after 0.5 s (the per-case bound)") for row in rows)


def test_a_timed_out_run_among_finished_ones_marks_the_median():
    from kafka_fast.bench.clients import CASE
    from kafka_fast.bench.result import Result
    from kafka_fast.bench.runner import _median, timed_out

    def run(wall: float) -> Result:
        return Result("kafka_fast", "produce()", "produce", 1000, 110_000, wall, 0.1)

    late = timed_out(CASE["kafka_fast.produce"], 30)
    picked = _median([run(1.0), late, run(2.0)])
    assert (picked.wall_s, picked.timed_out) == (1.0, True)  # the faster of two
    assert picked.remark == "TIMED OUT after 30 s in 1 of 3 runs (the per-case bound)"
    assert _median([late]).remark == "TIMED OUT after 30 s (the per-case bound)"
    assert _median([run(1.0), run(3.0), run(2.0)]).remark == ""


def test_the_java_consumer_tool_reads_every_record_on_tansu(tansu):
    """Tansu 0.6.0 closes the connection on Apache Kafka 4.4's ApiVersions v5: the tools run
    with the newest cached client whose request Tansu reads, and the consumer tool joins its
    group and reads every record written (one more than written fails the case: the
    test of the Apache Kafka tools shows it)."""
    from harness import create_topic, unique_topic

    from kafka_fast import Producer

    if java.missing():
        pytest.fail(f"the Java anchors need {java.missing()}")
    broker_max = java.broker_api_versions_max(tansu.bootstrap)
    assert broker_max == 4
    libs = java.libs_for(tansu.bootstrap)
    assert libs is not None and java.client_api_versions_max(libs) <= broker_max
    topic = unique_topic("java-perf-tansu")
    create_topic(tansu, topic, 1)
    payload = Payload.make(2000, 50, 0)
    with Producer({"bootstrap.servers": tansu.bootstrap, "linger.ms": 5}) as producer:
        producer.produce_batch(topic, payload.values)
        assert producer.flush(30) == 0
    wall, cpu, error = java.consumer_performance(tansu.bootstrap, topic, payload, 120)
    assert error == "" and wall > 0 and cpu > 0


def test_slow_peers_run_their_own_record_count(tansu, tmp_path):
    bench_produce = _load("bench_produce", ROOT / "benchmarks" / "bench_produce.py")
    bench_report = _load("bench_report", ROOT / "tools" / "bench_report.py")
    assert bench_produce.main([
        "--bootstrap", tansu.bootstrap, "-n", "20000", "--codecs", "none", "--acks", "1",
        "--clients", "kafka_fast.produce_batch,asyncio.futures",
        "--case-records", "asyncio.futures=3000", "--results", str(tmp_path)]) == 0
    (run,) = store.load(tmp_path / "produce.jsonl")
    assert run["settings"]["case_records"] == {"asyncio.futures": 3000}
    assert [(r["path"], r["records"], r["error"]) for r in run["results"]] == [
        ("produce_batch", 20000, ""), ("futures only, no client", 3000, "")]
    text = bench_report.update(f"<!-- bench: produce broker={tansu.bootstrap} -->\n"
                               "<!-- /bench -->\n", tmp_path)
    assert "20,000 records of 100 bytes" in text and "asyncio.futures 3,000 records" in text


def test_the_quiet_table_steps_run_every_peer_three_times_into_the_tables_suite(tmp_path):
    from benchmarks import bench_tables

    args = bench_tables.argparse.Namespace(records=1_000_000, peer_records=100_000, runs=3,
                                           case_timeout=300.0, note="", results=tmp_path)
    steps = {(s.broker, s.direction): s for s in bench_tables.STEPS}
    assert set(steps) == {(b, d) for b in ("tansu", "kafka") for d in ("produce", "consume")}
    cmd = steps["kafka", "produce"].command(args)
    opt = {cmd[i]: cmd[i + 1] for i in range(2, len(cmd) - 1) if cmd[i].startswith("-")}
    assert (opt["--broker"], opt["-n"], opt["--repeat"], opt["--suite"], opt["--acks"]) == (
        "kafka", "1000000", "3", "tables", "1,all")
    clients = opt["--clients"].split(",")
    assert {"kafka_fast.produce", "kafka_fast.produce_batch", "confluent.produce",
            "java.producer_perf", "aiokafka.send", "kafka-python.send"} <= set(clients)
    assert opt["--case-records"].split(",") == [f"{name}=100000" for name in clients
                                                 if name in bench_tables.SLOW_CASES]
    consume = steps["tansu", "consume"].command(args)
    assert {"java.consumer_perf", "confluent.consume", "kafka_fast.consume_batch",
            "aiokafka.getmany", "kafka-python.poll"} <= set(
        consume[consume.index("--clients") + 1].split(","))
    # no stored run here: every case is estimated at the default rate
    seconds = bench_tables.estimate_s(steps["tansu", "consume"], 1000, 1000, 3, tmp_path)
    assert seconds > 0
    with pytest.raises(SystemExit):
        bench_tables.main(["--runs", "2", "--estimate"])


def test_a_topic_made_for_a_case_takes_a_first_write_on_every_partition(apache_kafka):
    """Apache Kafka names itself leader of a new partition before it can write it (and
    refuses writes until then): the benchmarks' topic creator returns only once every
    partition can be written, so a producer that never retries writes all of them."""
    from kafka_fast import Producer
    from kafka_fast.admin import AdminClient
    from kafka_fast.bench.runner import admin_create_topic

    partitions = 400
    topic = f"bench-writable-{uuid.uuid4().hex[:8]}"
    admin_create_topic(apache_kafka.bootstrap)(topic, partitions)
    reports: list[tuple] = []
    producer = Producer({"bootstrap.servers": apache_kafka.bootstrap, "acks": "1",
                         "retries": 0, "enable.idempotence": False, "linger.ms": 0})
    try:
        for p in range(partitions):
            producer.produce(topic, str(p).encode(), partition=p,
                             on_delivery=lambda err, msg: reports.append(
                                 (err, msg.partition(), msg.offset(), msg.value())))
        assert producer.flush(60) == 0
    finally:
        producer.close()
        with AdminClient({"bootstrap.servers": apache_kafka.bootstrap}) as admin:
            for fut in admin.delete_topics([topic]).values():
                fut.result(60)
    assert [r[0] for r in reports if r[0] is not None] == []
    assert sorted((r[1], r[2], r[3]) for r in reports) == [
        (p, 0, str(p).encode()) for p in range(partitions)]


def test_a_warmed_topic_has_every_first_index_entry_and_no_record(apache_kafka):
    """The sweep warms its topics: afterwards the broker's index files of every partition hold
    their first entry (offset 1, placed after the first record's 4,097-byte value, in the
    offset and the time index), and the topic reads as empty: the records produced next are
    the only ones read, from offset 2 (by the sweep's untimed first read too)."""
    import struct

    from kafka_fast import Consumer, Producer, TopicPartition
    from kafka_fast.admin import AdminClient
    from kafka_fast.bench.runner import (
        INDEX_INTERVAL_BYTES,
        admin_create_topic,
        warm_indexes,
        warm_read,
    )

    partitions = 20
    topic = f"bench-warm-{uuid.uuid4().hex[:8]}"
    bootstrap = apache_kafka.bootstrap
    admin_create_topic(bootstrap)(topic, partitions)
    try:
        warm_indexes(bootstrap, topic, partitions)
        data = next(iter(apache_kafka.nodes.values())).workdir / "data"
        first = "0" * 20
        for p in range(partitions):
            folder = data / f"{topic}-{p}"
            relative, position = struct.unpack(
                ">ii", (folder / f"{first}.index").read_bytes()[:8])
            stamp, stamped = struct.unpack(">qi", (folder / f"{first}.timeindex").read_bytes()[:12])
            assert (relative, stamped) == (1, 1), p
            assert position > INDEX_INTERVAL_BYTES and stamp > 0, p
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        try:
            for p in range(partitions):
                producer.produce(topic, f"after-{p}".encode(), partition=p)
            assert producer.flush(60) == 0
        finally:
            producer.close()
        assert warm_read(bootstrap, topic, partitions, timeout=60) == partitions
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic,
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        try:
            assert [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                    for p in range(partitions)] == [(2, 3)] * partitions
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            got: list[tuple] = []
            deadline = time.monotonic() + 60
            while len(got) < partitions and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is not None and msg.error() is None:
                    got.append((msg.partition(), msg.offset(), msg.value()))
        finally:
            consumer.close()
        assert sorted(got) == [(p, 2, f"after-{p}".encode()) for p in range(partitions)]
    finally:
        with AdminClient({"bootstrap.servers": bootstrap}) as admin:
            for fut in admin.delete_topics([topic]).values():
                fut.result(60)
