"""``format("kafka_fast")`` on a real Spark standalone cluster (a master and two workers of
1 core each, ``harness.spark_cluster``) and the real Apache Kafka broker: batch reads and
writes run on both executors and give exactly the records written (and the same rows as
Spark's own ``format("kafka")`` on the same cluster); an exactly-once stream whose worker is
killed with SIGKILL mid-query writes every input row exactly once.

The drivers run in their own processes (``cluster_driver.py``); the executors get
``kafka_fast`` from the driver's configuration only (the daemons start without
``PYTHONPATH``), and every task reports which worker ran it and where its ``kafka_fast``
came from.
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
from pathlib import Path

import pytest
from confluent_kafka import Producer
from harness import create_topic, unique_topic
from harness.peers import require_java
from harness.spark_cluster import SparkCluster

from .kafka_records import read_records

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("cluster_driver.py")
DRIVER_TIMEOUT = 480  # a loaded 2-core machine (make test) takes minutes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One master and two workers for every test of this module; killed and removed after."""
    require_java()
    started = SparkCluster.start(tmp_path_factory.mktemp("spark-cluster"), workers=2)
    yield started
    started.stop()


def driver_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env["PYTHONPATH"] = str(ROOT)  # the driver imports this tree; executors: see the driver
    return env


def run_driver(cluster: SparkCluster, *args: str) -> dict:
    done = subprocess.run([sys.executable, str(DRIVER), *args], env=driver_env(), cwd=ROOT,
                          capture_output=True, text=True, timeout=DRIVER_TIMEOUT)
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{cluster.logs()}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def workers_seen(cluster: SparkCluster, where: set[str]) -> set[int]:
    """The worker slots the ``session id:kafka_fast root`` reports name; every report names
    this tree."""
    roots = {w.split(":", 1)[1] for w in where}
    assert roots == {str(ROOT)}, roots
    groups = {int(w.split(":", 1)[0]) for w in where}
    slots = {i: w.pid for i, w in enumerate(cluster.workers) if w is not None}
    assert groups <= set(slots.values()), (groups, slots)
    return {i for i, pid in slots.items() if pid in groups}


def test_batch_read_and_write_on_two_executors(kafka, cluster, builtin_package):
    n = 3000
    src = unique_topic("cl-src")
    create_topic(kafka, src, 4)
    out = run_driver(cluster, "batch", cluster.master_url, kafka.bootstrap, src, str(n),
                     *([builtin_package] if builtin_package else []))
    print("driver seconds:", out["seconds"])

    # the write: every row once, from tasks on both workers
    written = read_records(kafka, src, 4)
    assert sorted((k, v) for _, _, k, v, _ in written) == [
        (b"k%05d" % i, b"v%05d" % i) for i in range(n)]
    assert {p for p, *_ in written} == {0, 1, 2, 3}
    where = {dict(h)["where"].decode() for *_, h in written}
    assert workers_seen(cluster, where) == {0, 1}

    # the read: exactly the records in the log, read by tasks on both workers
    log = [[p, o, k.decode(), v.decode()] for p, o, k, v, _ in written]
    assert [r[:4] for r in out["kafka_fast"]] == log
    assert workers_seen(cluster, {r[4] for r in out["kafka_fast"]}) == {0, 1}

    if builtin_package is None:
        if os.environ.get("CI") == "true":
            pytest.fail("spark-sql-kafka-0-10 is not resolvable from Maven Central")
        return
    # Spark's own connector on the same cluster reads the same rows
    assert [r[:4] for r in out["builtin"]] == log
    assert workers_seen(cluster, {r[4] for r in out["builtin"]}) <= {0, 1}


def _lines(proc: subprocess.Popen, into: queue.Queue) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        into.put(line)
    into.put(None)


def test_exactly_once_stream_survives_a_killed_worker(kafka, cluster, tmp_path):
    n = 1500
    src, dst = unique_topic("cl-eos-in"), unique_topic("cl-eos-out")
    create_topic(kafka, src, 4)
    create_topic(kafka, dst, 2)
    producer = Producer(kafka.client_config({"linger.ms": 5}))
    values = [b"e%05d" % i for i in range(n)]
    for i, value in enumerate(values):
        producer.produce(src, key=b"k%d" % i, value=value, partition=i % 4)
    assert producer.flush(30) == 0
    prefix = f"cl-eos-{uuid.uuid4().hex[:6]}"

    lines: queue.Queue = queue.Queue()
    with open(tmp_path / "driver.log", "wb") as driver_err:
        proc = subprocess.Popen(
            [sys.executable, str(DRIVER), "stream", cluster.master_url, kafka.bootstrap, src,
             dst, str(tmp_path / "checkpoint"), prefix],
            env=driver_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=driver_err, text=True)
    reader = threading.Thread(target=_lines, args=(proc, lines), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + DRIVER_TIMEOUT
        killed_after = None
        result = None
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            msg = json.loads(line)
            if "progress" in msg and killed_after is None:
                # a micro-batch is done and the next is running: worker 0's executor and
                # its Python workers are in worker 0's session
                assert cluster.executor_dirs(0), cluster.logs()
                assert len(cluster.worker_pids(0)) >= 3, cluster.worker_pids(0)
                cluster.kill_worker(0)
                killed_after = msg["progress"]
                cluster.restart_worker(0)
            elif "error" in msg:
                result = msg
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    driver_log = (tmp_path / "driver.log").read_text(errors="replace")
    assert proc.returncode == 0, driver_log[-4000:]
    assert killed_after is not None and result is not None, driver_log[-4000:]
    assert result["error"] is None and not result["active"], result
    assert result["last_batch"] > killed_after  # the query went on after the kill
    assert "Lost executor" in driver_log  # Spark's scheduler saw the executor die

    committed = read_records(kafka, dst, 2)
    assert Counter(v for _, _, _, v, _ in committed) == Counter(values)  # each row once
    everything = read_records(kafka, dst, 2, "read_uncommitted")
    # records the killed executor's open transaction had sent (if any) are aborted
    print(f"killed after batch {killed_after}; last batch {result['last_batch']}; "
          f"{len(everything) - len(committed)} aborted records in the log")
    assert len(everything) >= len(committed)
