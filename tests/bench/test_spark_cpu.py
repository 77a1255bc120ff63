"""benchmarks/bench_spark.py's CPU accounting from /proc and the table of a stored run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from benchmarks.bench_spark import (
    PROCESS_GROUPS,
    CpuMeter,
    cpu_diff,
    cpu_snapshot,
    render_table,
    write_bound,
)

pytestmark = pytest.mark.skipif(not Path("/proc/stat").exists(), reason="needs Linux /proc")


def burn(seconds: float) -> None:
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


def test_the_snapshot_of_this_process_grows_with_the_cpu_it_burns():
    me = os.getpid()
    before = cpu_snapshot()
    assert set(before) == {"machine", *PROCESS_GROUPS}
    assert list(before["driver"]) == [me] and before["driver"][me].own > 0
    assert before["driver"][me].ppid == os.getppid()
    burn(0.3)
    after = cpu_snapshot()
    assert after["driver"][me].own >= before["driver"][me].own + 0.25
    assert after["machine"] > before["machine"]
    used = cpu_diff(before, after)
    assert set(used) == {"machine", *PROCESS_GROUPS}
    # ticks of 1/CLK_TCK s; the machine's count includes this process's
    assert 0.25 <= used["driver"] < 1.0
    assert used["machine"] >= 0.2
    assert all(v >= 0 for v in used.values() if v is not None)


def test_the_meter_samples_while_the_job_runs():
    with CpuMeter(interval=0.05) as meter:
        time.sleep(0.3)  # (a thread burning CPU would hold the GIL the sampler needs)
        burn(0.3)
    assert len(meter.snapshots) >= 4  # the two ends and some between
    assert 0.25 <= meter.used["driver"] < 1.0
    assert meter.used == cpu_diff(*meter.snapshots)


# A stand-in for Spark's JVM (its command line names the main class the snapshot looks for),
# steered by lines on stdin: it forks a worker that burns CPU, ends and is waited for (its CPU
# moves to the parent's cutime), then, ignoring SIGCHLD as pyspark.daemon does, one whose CPU
# leaves with it when it ends.
JVM = """
import os, signal, sys, time

def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass

def step(word):
    print(word, flush=True)
    sys.stdin.readline()

def worker(word):
    pid = os.fork()
    if pid == 0:
        burn(0.3)
        step(word)
        os._exit(0)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:  # SIGCHLD ignored: reaped by the kernel
        pass

step("ready")
worker("waited worker burnt")
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
worker("reaped worker burnt")
step("done")
"""

BROKER = """
import sys, time
print("ready", flush=True)
sys.stdin.readline()
start = time.process_time()
while time.process_time() - start < 0.3:
    pass
print("done", flush=True)
sys.stdin.readline()
"""


def test_workers_count_under_the_spark_jvm_once_also_after_they_end():
    kafka_main, spark_main = f"kafka.Test{uuid.uuid4().hex}", f"spark.Test{uuid.uuid4().hex}"

    def snapshot() -> dict:
        return cpu_snapshot(kafka_main=kafka_main, spark_main=spark_main)

    def send(proc: subprocess.Popen, expect: str) -> None:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == expect + "\n"

    nobody = snapshot()
    assert (nobody["broker"], nobody["spark_jvm"], nobody["python_workers"]) == (None, None, None)
    assert cpu_diff(nobody, snapshot())["python_workers"] is None
    jvm = subprocess.Popen([sys.executable, "-c", JVM, spark_main], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    broker = subprocess.Popen([sys.executable, "-c", BROKER, kafka_main],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout.readline() == "ready\n" and broker.stdout.readline() == "ready\n"
        before = snapshot()
        assert list(before["spark_jvm"]) == [jvm.pid] and list(before["broker"]) == [broker.pid]
        assert list(before["python_workers"]) == [jvm.pid]  # what the JVM waited for
        assert before["python_workers"][jvm.pid].own == 0.0
        send(broker, "done")
        send(jvm, "waited worker burnt")
        waited_running = snapshot()
        (waited,) = set(waited_running["python_workers"]) - {jvm.pid}
        assert waited_running["python_workers"][waited].own >= 0.25
        assert waited_running["python_workers"][waited].ppid == jvm.pid
        send(jvm, "reaped worker burnt")  # the first ended, the JVM waited for it
        reaped_running = snapshot()
        assert waited not in reaped_running["python_workers"]
        assert reaped_running["python_workers"][jvm.pid].waited >= 0.25
        send(jvm, "done")  # the second ended; nobody waited for it
        after = snapshot()
        assert set(after["python_workers"]) == {jvm.pid}
        used = cpu_diff(before, waited_running, reaped_running, after)
        # both workers, 0.3 s each, once: the first seen running and then in the JVM's
        # cutime, the second only seen running
        assert 0.55 <= used["python_workers"] < 0.8
        # from the two ends only the one the JVM waited for counts
        assert 0.25 <= cpu_diff(before, after)["python_workers"] < 0.5
        # seen running and then waited for: once; the second never seen
        assert 0.25 <= cpu_diff(before, waited_running, after)["python_workers"] < 0.5
        assert used["spark_jvm"] < 0.2  # the stand-in itself only forks and waits
        assert 0.25 <= used["broker"] < 1.0
        assert all(v >= 0 for v in used.values() if v is not None)
    finally:
        for proc in (jvm, broker):
            proc.stdin.close()
            proc.wait(timeout=30)


def _run(results: list[dict]) -> dict:
    return {"bench": "spark", "broker": "Apache Kafka 4.3.1 (1 broker, local)",
            "commit": "abc123", "time": "2026-12-01T10:00:00+00:00",
            "machine": {"cpu": "Test CPU", "cpus": 2, "python": "3.11.7"},
            "settings": {"rows": 1_000_000, "partitions": 4, "runs": 3, "warmup_rows": 200_000,
                         "micro_batches": 5, "key_bytes": 10, "value_bytes": 100,
                         "master": "local[2]", "spark": "4.3.0",
                         "builtin_package": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"},
            "results": results}


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in table.splitlines() if line.startswith("| batch")]


def test_the_table_shows_the_cpu_seconds_and_blanks_for_runs_without():
    def row(connector: str, seconds: float, same: bool | None, cpu: dict | None) -> dict:
        r = {"case": "batch write", "connector": connector, "rows": 1_000_000,
             "seconds": seconds, "rows_per_s": round(1_000_000 / seconds),
             "vs_builtin": round(1.5 / seconds, 2), "same_rows_as_builtin": same,
             "samples_s": [seconds]}
        if cpu is not None:
            r["cpu_s"] = cpu
        return r

    run = _run([
        row("built-in", 1.5, True, {"broker": 1.2, "spark_jvm": 2.1, "python_workers": 0.01,
                                    "machine": 3.4}),
        row("kafka_fast", 0.75, True, {"broker": 0.6, "spark_jvm": 0.55,
                                       "python_workers": 0.47, "machine": 1.7}),
        row("Spark alone (Python sink, no client)", 0.4, None,
            {"broker": None, "spark_jvm": 0.5, "python_workers": 0.21, "machine": 0.8})])
    table = render_table(run)
    assert table.splitlines()[0] == (
        "| job | connector | rows/s | seconds | vs built-in | same rows | broker CPU s | "
        "Spark JVM CPU s | Python workers CPU s | machine CPU s |")
    assert table.splitlines()[1] == "|---|---|---:|---:|---:|---|---:|---:|---:|---:|"
    assert _cells(table) == [
        ["batch write", "built-in", "666,667", "1.50", "1.00x", "yes", "1.20", "2.10", "0.01",
         "3.40"],
        ["batch write", "kafka_fast", "1,333,333", "0.75", "2.00x", "yes", "0.60", "0.55",
         "0.47", "1.70"],
        ["batch write", "Spark alone (Python sink, no client)", "2,500,000", "0.40", "3.75x",
         "n/a", "", "0.50", "0.21", "0.80"]]
    assert "CPU columns: CPU seconds used during the job" in table
    # Spark alone's JVM 0.5 + Python 0.21 + kafka_fast's broker 0.6 over 2 CPUs: 0.655 s
    seconds, ratio = write_bound(run)
    assert seconds == pytest.approx(0.655) and ratio == pytest.approx(1.5 / 0.655)
    assert ("to the 2 CPUs: at least 0.66 s, 2.29x the built-in's rows/s at most in this run"
            in table)
    # a run stored before the CPU columns: the same columns, blank
    old = render_table(_run([row("built-in", 1.5, True, None),
                             row("kafka_fast", 1.0, False, None)]))
    assert _cells(old) == [
        ["batch write", "built-in", "666,667", "1.50", "1.00x", "yes", "", "", "", ""],
        ["batch write", "kafka_fast", "1,000,000", "1.00", "1.50x", "NO", "", "", "", ""]]
    assert "did not measure CPU" in old and "CPU columns:" not in old
    assert write_bound(_run([row("built-in", 1.5, True, None)])) is None
    assert "Batch write bound" not in old
