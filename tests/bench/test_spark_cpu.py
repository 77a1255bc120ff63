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
    per_million,
    steady_state,
)
from benchmarks.spark_report import (
    STREAM_ALONE_LABEL,
    read_ceiling,
    render_table,
    shown_runs,
    stream_ceiling,
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


def test_the_meter_gives_the_cpu_of_a_window():
    with CpuMeter(interval=0.05) as meter:
        burn(0.3)
        time.sleep(0.4)
        quiet_start = time.time()
        time.sleep(0.3)
        quiet_end = time.time()
        time.sleep(0.4)
        busy_start = time.time()
        burn(0.3)
        busy_end = time.time()
    span, used = meter.used_between(quiet_start, quiet_end)
    assert span >= quiet_end - quiet_start
    assert used["driver"] < 0.15  # neither burn around the window
    span, used = meter.used_between(busy_start, busy_end)
    assert span >= busy_end - busy_start
    assert 0.25 <= used["driver"] < 0.6


def _progress(start_s: float, rows: int, ms: int) -> dict:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(int(start_s)))
    return {"timestamp": f"{stamp}.{round(start_s % 1 * 1000):03d}Z", "numInputRows": rows,
            "durationMs": {"triggerExecution": ms, "addBatch": ms - 50}}


def test_the_steady_state_leaves_out_the_first_batches_and_the_empty_ones():
    t0 = 1_800_000_000.0
    progress = [_progress(t0, 100, 5000),  # the query's start: slow
                _progress(t0 + 5, 100, 1000), _progress(t0 + 6, 0, 10),
                _progress(t0 + 6.5, 100, 1000), _progress(t0 + 7.5, 100, 2000)]
    got = steady_state(progress, skip=1)
    assert got["rows"] == 300 and got["batches"] == 3
    assert got["start"] == pytest.approx(t0 + 5) and got["end"] == pytest.approx(t0 + 9.5)
    assert got["rows_per_s"] == pytest.approx(300 / 4.5)
    assert got["p50_ms"] == 1000 and got["p99_ms"] == pytest.approx(1980)
    # each phase's median over the kept micro-batches; one a progress lacks counts as 0
    assert got["phases_ms"]["addBatch"] == 950 and got["phases_ms"]["commitOffsets"] == 0
    assert steady_state(progress, skip=9)["batches"] == 1  # at least one kept
    with pytest.raises(ValueError, match="no rows"):
        steady_state([_progress(t0, 0, 5)], skip=0)


def test_cpu_per_million_rows_adds_spark_and_its_workers():
    cpus = [{"spark_jvm": 1.0, "python_workers": 0.5, "broker": 0.4, "machine": 2.0},
            {"spark_jvm": 2.0, "python_workers": 1.0, "broker": 0.8, "machine": 4.0}]
    assert per_million(cpus, [500_000, 1_000_000]) == {
        "spark_and_client": 3.0, "broker": 0.8, "machine": 4.0}
    assert per_million([{"spark_jvm": 1.0, "python_workers": 0.5, "broker": None,
                         "machine": 2.0}], [1_000_000])["broker"] is None


def _run(results: list[dict], rows: int = 1_000_000, state: str = "loaded",
         when: str = "2026-12-01T10:00:00+00:00") -> dict:
    return {"bench": "spark", "broker": "Apache Kafka 4.3.1 (1 broker, local)",
            "commit": "abc123", "time": when,
            "machine": {"cpu": "Test CPU", "cpus": 2, "python": "3.11.7"},
            "settings": {"format": 2, "rows": rows, "partitions": 4, "runs": 3,
                         "warmup_rows": 200_000, "key_bytes": 10, "value_bytes": 100,
                         "master": "local[2]", "spark": "4.3.0",
                         "builtin_package": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
                         "trigger_ms": 200, "trigger_rows": 100_000, "skip_batches": 2,
                         "machine_state": state, "other_cpu_share": 0.4,
                         "options": {"built-in": {"batch write": {"kafka.linger.ms": "5"}},
                                     "kafka_fast": {"batch read": {}}},
                         "tuning": [{"case": "batch write", "label": "linger 5 ms",
                                     "options": {"kafka.linger.ms": "5"},
                                     "rows_per_s": 700_000}],
                         "tune_rows": 1_000_000},
            "results": results}


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in table.splitlines()
            if line.startswith(("| batch", "| streaming"))]


def _row(case: str, connector: str, seconds: float, same: bool | None, cpu: dict | None,
         **extra) -> dict:
    r = {"case": case, "connector": connector, "rows": 1_000_000, "seconds": seconds,
         "rows_per_s": round(1_000_000 / seconds), "vs_builtin": round(1.5 / seconds, 2),
         "same_rows_as_builtin": same, "samples_s": [seconds], **extra}
    if cpu is not None:
        r["cpu_s"] = cpu
        r["cpu_s_per_million"] = {"spark_and_client": cpu["spark_jvm"] + cpu["python_workers"],
                                  "broker": cpu["broker"], "machine": cpu["machine"]}
    return r


def test_the_table_shows_rates_latencies_cpu_per_million_and_the_settings():
    run = _run([
        _row("batch write", "built-in", 1.5, True,
             {"broker": 1.2, "spark_jvm": 2.1, "python_workers": 0.0, "machine": 3.4}),
        _row("batch write", "kafka_fast", 0.75, True,
             {"broker": 0.6, "spark_jvm": 0.55, "python_workers": 0.47, "machine": 1.7}),
        _row("batch write", "Spark alone (Python sink, no client)", 0.4, None,
             {"broker": 0.0, "spark_jvm": 0.5, "python_workers": 0.21, "machine": 0.8}),
        _row("streaming", "kafka_fast", 1.0, True, None, p50_ms=180.4, p99_ms=1234.0,
             phases_ms={"latestOffset": 6.0, "addBatch": 150.4, "triggerExecution": 180.4})])
    table = render_table(run)
    assert table.splitlines()[0] == (
        "| job | connector | rows/s | vs built-in | seconds | micro-batch p50 / p99 ms | "
        "Spark + client CPU s/M | broker CPU s/M | machine CPU s/M | same rows |")
    assert _cells(table)[:4] == [
        ["batch write", "built-in", "666,667", "1.00x", "1.50", "", "2.10", "1.20", "3.40",
         "yes"],
        ["batch write", "kafka_fast", "1,333,333", "2.00x", "0.75", "", "1.02", "0.60", "1.70",
         "yes"],
        ["batch write", "Spark alone (Python sink, no client)", "2,500,000", "3.75x", "0.40",
         "", "0.71", "0.00", "0.80", "n/a"],
        ["streaming", "kafka_fast", "1,000,000", "1.50x", "1.00", "180 / 1,234", "", "", "",
         "yes"]]
    assert "**loaded machine**: processes other than the benchmark's used 40%" in table
    assert "- built-in, batch write: `kafka.linger.ms=5`" in table
    assert "- kafka_fast, batch read: defaults" in table
    assert "| batch write | linger 5 ms | 700,000 |" in table
    assert ("| connector | latestOffset | addBatch | triggerExecution |\n|---|---:|---:|---:|\n"
            "| kafka_fast | 6 | 150 | 180 |") in table
    # Spark alone's JVM 0.5 + Python 0.21 + kafka_fast's broker 0.6 over 2 CPUs: 0.655 s
    seconds, ratio = write_bound(run)
    assert seconds == pytest.approx(0.655) and ratio == pytest.approx(1.5 / 0.655)
    assert ("to the 2 CPUs: at least 0.66 s, 2.29x the built-in's rows/s at most in this run"
            in table)
    assert write_bound(_run([_row("batch write", "built-in", 1.5, True, None)])) is None


def test_the_table_shows_the_read_with_no_client_and_kafka_fasts_share_of_it():
    run = _run([
        _row("batch read", "built-in", 1.5, True, None),
        _row("batch read", "kafka_fast", 0.6, True, None),
        _row("batch read", "Spark alone (Python reader, no client)", 0.4, None, None)])
    table = render_table(run)
    assert _cells(table)[:3] == [
        ["batch read", "built-in", "666,667", "1.00x", "1.50", "", "", "", "", "yes"],
        ["batch read", "kafka_fast", "1,666,667", "2.50x", "0.60", "", "", "", "", "yes"],
        ["batch read", "Spark alone (Python reader, no client)", "2,500,000", "3.75x", "0.40",
         "", "", "", "", "n/a"]]
    share, ratio = read_ceiling(run)
    assert share == pytest.approx(1_666_667 / 2_500_000) and ratio == 3.75
    assert ("(the Spark alone (Python reader, no client) row) reads at 3.75x the built-in's "
            "rows/s in this run; kafka_fast reads at 67% of it.") in table
    # runs stored before the row was measured have no ceiling line
    older = _run(run["results"][:2])
    assert read_ceiling(older) is None and "Batch read ceiling" not in render_table(older)


def test_the_read_with_no_client_yields_the_kafka_schema_in_the_planned_tasks():
    from benchmarks.bench_spark import NullArrowSource, NullBatchReader
    from kafka_fast.spark.reader import BATCH_RECORDS, arrow_schema

    source = NullArrowSource({"rows": "250001", "partitions": "2"})
    assert source.schema().simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>")
    reader = source.reader(source.schema())
    assert isinstance(reader, NullBatchReader)
    parts = reader.partitions()
    assert [(p.start, p.end) for p in parts] == [(0, 125_001), (125_001, 250_001)]
    batches = list(reader.read(parts[1]))
    assert [b.num_rows for b in batches] == [BATCH_RECORDS, 125_000 - BATCH_RECORDS]
    assert all(b.schema == arrow_schema() for b in batches)
    row = batches[-1].slice(1, 1).to_pylist()[0]
    assert (row["key"], row["value"], row["offset"]) == (b"k" * 10, b"v" * 100, 1)


def test_the_table_shows_the_stream_with_no_client_and_kafka_fasts_share_of_it():
    run = _run([
        _row("streaming", "built-in", 1.5, True, None),
        _row("streaming", "kafka_fast", 3.125, True, None),
        _row("streaming", STREAM_ALONE_LABEL, 3.0, None, None)])
    share, ratio = stream_ceiling(run)
    assert share == pytest.approx(320_000 / 333_333) and ratio == 0.5
    assert (f"(the {STREAM_ALONE_LABEL} row) runs at 0.50x the built-in's rows/s in this "
            "run; kafka_fast runs at 96% of it.") in render_table(run)
    older = _run(run["results"][:2])
    assert stream_ceiling(older) is None and "Streaming ceiling" not in render_table(older)


def test_the_report_prefers_the_newest_quiet_run_of_each_size():
    old_quiet = _run([], state="quiet", when="2026-12-01T10:00:00+00:00")
    new_loaded = _run([], state="loaded", when="2026-12-02T10:00:00+00:00")
    big_loaded = _run([], rows=10_000_000, when="2026-12-01T11:00:00+00:00")
    older_format = {**_run([]), "settings": {"rows": 1_000_000}}
    assert shown_runs([old_quiet, new_loaded, big_loaded, older_format]) == [
        old_quiet, big_loaded]
    newer_quiet = _run([], state="quiet", when="2026-12-03T10:00:00+00:00")
    assert shown_runs([old_quiet, newer_quiet, new_loaded])[0] is newer_quiet


def test_the_report_writes_the_tables_and_the_chart(tmp_path):
    import json

    from benchmarks.spark_report import TABLE_END, TABLE_START, write_report

    results = []
    for case in ("batch write", "batch read", "streaming"):
        results += [_row(case, "built-in", 1.5, True, None), _row(case, "kafka_fast", 0.6, True, None)]
    stored = tmp_path / "spark.jsonl"
    stored.write_text(json.dumps(_run(results)) + "\n", encoding="utf-8")
    doc, chart = tmp_path / "spark.md", tmp_path / "chart.png"
    doc.write_text(f"before\n{TABLE_START}\nold\n{TABLE_END}\nafter\n", encoding="utf-8")
    write_report(stored, doc, chart)
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith(f"{TABLE_END}\nafter\n")
    assert "old" not in text and "![rows/s of both connectors](chart.png)" in text
    assert "#### 1,000,000 rows" in text and "| streaming | kafka_fast | 1,666,667 | 2.50x" in text
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # with no run of the current format the block says so
    stored.write_text(json.dumps({**_run([]), "settings": {"rows": 5}}) + "\n", encoding="utf-8")
    write_report(stored, doc, tmp_path / "none.png")
    assert "No run of this comparison is stored yet" in doc.read_text(encoding="utf-8")
    assert not (tmp_path / "none.png").exists()


def test_the_null_stream_source_serves_its_rows_in_trigger_sized_batches():
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

    from benchmarks.bench_spark import NullStream, NullStreamReader
    from kafka_fast.spark.reader import arrow_schema

    assert NullStream({}).schema().simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>")
    reader = NullStreamReader(rows=250_000, per_trigger=100_000, partitions=2)
    assert reader.initialOffset() == {"row": 0}
    limit = reader.getDefaultReadLimit()
    assert isinstance(limit, ReadMaxRows) and limit.max_rows == 100_000
    assert reader.latestOffset({"row": 0}, limit) == {"row": 100_000}
    assert reader.latestOffset({"row": 200_000}, limit) == {"row": 250_000}
    assert reader.latestOffset({"row": 0}, ReadAllAvailable()) == {"row": 250_000}
    parts = reader.partitions({"row": 200_000}, {"row": 250_000})
    assert [(p.start, p.end) for p in parts] == [(200_000, 225_000), (225_000, 250_000)]
    batches = list(reader.read(parts[1]))
    assert [b.num_rows for b in batches] == [10_000, 10_000, 5_000]
    assert all(b.schema == arrow_schema() for b in batches)
    assert batches[-1].column("value")[0].as_py() == b"v" * 100
    assert batches[-1].column("key")[0].as_py() == b"k" * 10
