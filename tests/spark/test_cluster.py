"""``format("kafka_fast")`` on a real Spark standalone cluster (a master and two workers of
1 core each, ``harness.spark_cluster``) and the real Apache Kafka broker: batch reads and
writes run on both executors and give exactly the records written (and the same rows as
Spark's own ``format("kafka")`` on the same cluster); an exactly-once stream whose worker is
killed with SIGKILL mid-query writes every input row exactly once.

One driver process (``cluster_driver.py``: one session, one pair of executors) runs both
scenarios in turn, the batch one first; the executors get ``kafka_fast`` from the driver's
configuration only (the daemons start without ``PYTHONPATH``), and every task reports which
worker ran it and where its ``kafka_fast`` came from.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Producer
from harness import create_topic, unique_topic
from harness.jvm_start import spark_submit_args
from harness.peers import require_java
from harness.spark_cluster import SparkCluster

from .kafka_records import read_records

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("cluster_driver.py")
DRIVER_TIMEOUT = 480  # a loaded 2-core machine (make test) takes minutes
BATCH_ROWS = 3000
STREAM_VALUES = [b"e%05d" % i for i in range(1000)]  # 4 micro-batches of 250 rows


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One master and two workers for every test of this module; killed and removed after."""
    require_java()
    started = SparkCluster.start(tmp_path_factory.mktemp("spark-cluster"), workers=2)
    yield started
    started.stop()


def driver_env() -> dict[str, str]:
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": spark_submit_args()}
    env["PYTHONPATH"] = str(ROOT)  # the driver imports this tree; executors: see the driver
    return env


@dataclass
class Run:
    """What the driver process reported, and what the test saw of the cluster meanwhile."""

    batch: dict = field(default_factory=dict)
    batch_slots: dict[int, int] = field(default_factory=dict)  # worker slot: session id
    stream: dict | None = None
    stream_topic: str = ""
    killed_after: int | None = None
    before_kill: tuple[int, int] = (0, 0)  # worker 0's executor dirs, processes
    driver_log: str = ""
    returncode: int | None = None


def _lines(proc: subprocess.Popen, into: queue.Queue) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        into.put(line)
    into.put(None)


@pytest.fixture(scope="module")
def run(kafka, cluster, builtin_package, tmp_path_factory) -> Run:
    """One driver process (one session, its two executors) runs both scenarios: the batch
    write and reads of ``BATCH_ROWS`` rows, then the exactly-once stream of ``STREAM_ROWS``
    rows, whose worker 0 is killed (SIGKILL) once its first micro-batch is done and is then
    started again."""
    tmp = tmp_path_factory.mktemp("spark-cluster-driver")
    batch_topic = unique_topic("cl-src")
    src, dst = unique_topic("cl-eos-in"), unique_topic("cl-eos-out")
    create_topic(kafka, batch_topic, 4)
    create_topic(kafka, src, 4)
    create_topic(kafka, dst, 2)
    producer = Producer(kafka.client_config({"linger.ms": 5}))
    for i, value in enumerate(STREAM_VALUES):
        producer.produce(src, key=b"k%d" % i, value=value, partition=i % 4)
    assert producer.flush(30) == 0
    prefix = f"cl-eos-{uuid.uuid4().hex[:6]}"

    out = Run()
    lines: queue.Queue = queue.Queue()
    with open(tmp / "driver.log", "wb") as driver_err:
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), cluster.master_url, kafka.bootstrap, batch_topic,
             str(BATCH_ROWS), src, dst, str(tmp / "checkpoint"), prefix,
             *([builtin_package] if builtin_package else [])],
            env=driver_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=driver_err, text=True)
    reader = threading.Thread(target=_lines, args=(proc, lines), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + DRIVER_TIMEOUT
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            msg = json.loads(line)
            if "batch" in msg:
                out.batch = msg["batch"]
                out.batch_slots = {i: w.pid for i, w in enumerate(cluster.workers)
                                   if w is not None}
                print("batch seconds:", out.batch["seconds"])
            elif "progress" in msg and out.killed_after is None:
                # a micro-batch is done and the next is running: worker 0's executor and
                # its Python workers are in worker 0's session
                out.before_kill = (len(cluster.executor_dirs(0)), len(cluster.worker_pids(0)))
                cluster.kill_worker(0)
                out.killed_after = msg["progress"]
                print("stream: killed worker 0 after", msg)
                cluster.restart_worker(0)
            elif "stream" in msg:
                out.stream = msg["stream"]
                print("stream seconds:", out.stream["seconds"])
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    out.returncode = proc.returncode
    out.driver_log = (tmp / "driver.log").read_text(errors="replace")
    assert out.returncode == 0, f"{out.driver_log[-4000:]}\n{cluster.logs()}"
    out.batch["topic"], out.stream_topic = batch_topic, dst
    return out


def workers_seen(slots: dict[int, int], where: set[str]) -> set[int]:
    """The worker slots the ``session id:kafka_fast root`` reports name; every report names
    this tree."""
    roots = {w.split(":", 1)[1] for w in where}
    assert roots == {str(ROOT)}, roots
    groups = {int(w.split(":", 1)[0]) for w in where}
    assert groups <= set(slots.values()), (groups, slots)
    return {i for i, pid in slots.items() if pid in groups}


def test_batch_read_and_write_on_two_executors(kafka, run, builtin_package):
    out = run.batch
    assert out, run.driver_log[-4000:]
    written = read_records(kafka, out["topic"], 4)
    # the write: every row once, from tasks on both workers
    assert sorted((k, v) for _, _, k, v, _ in written) == [
        (b"k%05d" % i, b"v%05d" % i) for i in range(BATCH_ROWS)]
    assert {p for p, *_ in written} == {0, 1, 2, 3}
    where = {dict(h)["where"].decode() for *_, h in written}
    assert workers_seen(run.batch_slots, where) == {0, 1}

    # the read: exactly the records in the log, read by tasks on both workers
    log = [[p, o, k.decode(), v.decode()] for p, o, k, v, _ in written]
    assert [r[:4] for r in out["kafka_fast"]] == log
    assert workers_seen(run.batch_slots, {r[4] for r in out["kafka_fast"]}) == {0, 1}

    if builtin_package is None:
        if os.environ.get("CI") == "true":
            pytest.fail("spark-sql-kafka-0-10 is not resolvable from Maven Central")
        return
    # Spark's own connector on the same cluster reads the same rows
    assert [r[:4] for r in out["builtin"]] == log
    assert workers_seen(run.batch_slots, {r[4] for r in out["builtin"]}) <= {0, 1}


def test_exactly_once_stream_survives_a_killed_worker(kafka, run):
    result = run.stream
    assert run.killed_after is not None and result is not None, run.driver_log[-4000:]
    # when worker 0 was killed, its executor and its Python workers were running
    assert run.before_kill[0] >= 1 and run.before_kill[1] >= 3, run.before_kill
    assert result["error"] is None and not result["active"], result
    assert result["last_batch"] > run.killed_after  # the query went on after the kill
    assert "Lost executor" in run.driver_log  # Spark's scheduler saw the executor die

    committed = read_records(kafka, run.stream_topic, 2)
    assert Counter(v for _, _, _, v, _ in committed) == Counter(STREAM_VALUES)  # each once
    everything = read_records(kafka, run.stream_topic, 2, "read_uncommitted")
    # records the killed executor's open transaction had sent (if any) are aborted
    print(f"killed after batch {run.killed_after}; last batch {result['last_batch']}; "
          f"{len(everything) - len(committed)} aborted records in the log")
    assert len(everything) >= len(committed)
