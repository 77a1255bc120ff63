"""Spark local[2] on Kafka: the kafka_fast data source against Spark's built-in connector.

Default: the same batch write, batch read and streaming job (readStream -> writeStream,
availableNow, ``maxOffsetsPerTrigger`` of ``--rows / --micro-batches``) run with ``format("kafka")`` (``spark-sql-kafka-0-10`` from Maven Central) and
``format("kafka_fast")`` on one Apache Kafka broker (the test harness's), ``--rows`` rows of
10-byte keys and 100-byte values into fresh ``--partitions``-partition topics. Each job's
result is checked to be the same rows for both connectors (count and a sum of xxhash64
over partition, offset, key, value and timestamp for reads; over key and value for what was
written). The batch write also runs with a Python data source that only counts the rows
(``null_arrow_sink``: Spark's own cost of the Python data source path, no client). For every
job the CPU seconds of the broker's JVM, Spark's JVM, PySpark's Python workers and the whole
machine are read from /proc (``cpu_snapshot``, ``CpuMeter``). The run is appended to
docs/bench/results/spark.jsonl and the table in docs/spark.md is regenerated from it
(``--report`` only regenerates).

``--clients`` runs the older comparison instead: kafka_fast's helper functions against
confluent-kafka inside Spark jobs. Every job runs on the same cached DataFrame (``--rows`` rows: 10-byte keys, 100-byte values)
and the same broker (a private Tansu unless ``--bootstrap`` is given), each into a fresh
topic of ``--partitions`` partitions. Writers:

- ``kafka_fast foreach_partition_writer``: ``df.foreachPartition`` (Spark makes a Row per record);
- ``kafka_fast write_kafka``: the Arrow path (``mapInArrow``, no Python object per record);
- ``confluent produce() in foreachPartition``: the usual way, one ``produce`` per Row
  (linger.ms 5, a 1M-message queue);
- ``confluent produce() in mapInArrow``: confluent fed from Arrow batches, its best case here;
- two reference jobs with no Kafka client: Spark handing the rows, or the Arrow batches, to a
  Python function that only iterates them (the floor of each way in).

Readers (each followed by the same ``count`` + ``sum(length(value))`` aggregation in Spark):

- ``kafka_fast read_kafka`` (``consume_batch`` -> Arrow -> ``mapInArrow``);
- ``confluent consume() in mapPartitions``: the same offset ranges read with ``assign`` and
  ``consume(10000)``, rows turned into a DataFrame by ``createDataFrame``.

Wall time is measured around the Spark action; the table shows the median rows/s of
``--runs`` runs and the ratio to the confluent ``foreachPartition`` / ``mapPartitions`` job.

    python benchmarks/bench_spark.py [--rows 1000000] [--runs 2] [--partitions 4]
    python benchmarks/bench_spark.py --report          # docs table from the stored runs
    python benchmarks/bench_spark.py --clients         # helpers vs confluent-kafka
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "spark"))

import builtin_connector  # noqa: E402
from harness import create_topic, start_apache_kafka, start_tansu  # noqa: E402
from harness.brokers import Broker  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    DataSource,
    DataSourceArrowWriter,
    WriterCommitMessage,
)

from kafka_fast.bench import store  # noqa: E402
from kafka_fast.bench.result import proc_stat  # noqa: E402
from kafka_fast.spark import (  # noqa: E402
    foreach_partition_writer,
    offset_ranges,
    ranges_to_dataframe,
    read_kafka,
    split_ranges,
    write_kafka,
)
from kafka_fast.spark.reader import KAFKA_SCHEMA  # noqa: E402

CONFLUENT_PRODUCER = {"linger.ms": 5, "queue.buffering.max.messages": 1_000_000,
                      "queue.buffering.max.kbytes": 1_048_576}


def confluent_foreach_partition(conf: dict, topic: str):
    """One ``produce()`` per Row inside ``foreachPartition``, flushed at the end."""

    def write(rows):
        from confluent_kafka import Producer

        producer = Producer({**conf, **CONFLUENT_PRODUCER})
        errors = []

        def on_delivery(err, msg):
            if err is not None:
                errors.append(err)

        for row in rows:
            while True:
                try:
                    producer.produce(topic, value=row.value, key=row.key, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        producer.flush()
        if errors:
            raise RuntimeError(f"{len(errors)} deliveries failed: {errors[0]}")

    return write


def confluent_map_in_arrow(conf: dict, topic: str):
    """confluent fed from Arrow batches (``mapInArrow``): no Spark Row objects."""

    def write(batches):
        import pyarrow as pa
        from confluent_kafka import Producer

        producer = Producer({**conf, **CONFLUENT_PRODUCER})
        errors = []
        sent = 0

        def on_delivery(err, msg):
            if err is not None:
                errors.append(err)

        for batch in batches:
            keys = batch.column("key").to_pylist()
            for i, value in enumerate(batch.column("value").to_pylist()):
                while True:
                    try:
                        producer.produce(topic, value=value, key=keys[i], on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.05)
                producer.poll(0)
            sent += batch.num_rows
        producer.flush()
        if errors:
            raise RuntimeError(f"{len(errors)} deliveries failed: {errors[0]}")
        yield pa.RecordBatch.from_arrays([pa.array([sent], pa.int64())], names=["sent"])

    return write


def confluent_range_reader(conf: dict):
    """``mapPartitions`` over (topic, partition, start, end) rows: assign + consume(10000)."""

    def read(ranges):
        import datetime as dt

        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**conf, "group.id": "bench-confluent-reader",
                             "enable.auto.commit": False})
        utc = dt.timezone.utc
        try:
            for topic, partition, start, end in ranges:
                consumer.assign([TopicPartition(topic, partition, start)])
                next_offset = start
                while next_offset < end:
                    for msg in consumer.consume(10_000, 1.0):
                        if msg.error():
                            raise RuntimeError(str(msg.error()))
                        offset = msg.offset()
                        if offset >= end:
                            next_offset = end
                            break
                        kind, ts = msg.timestamp()
                        yield (msg.key(), msg.value(), topic, partition, offset,
                               dt.datetime.fromtimestamp(ts / 1000, utc), kind - 1)
                        next_offset = offset + 1
                consumer.unassign()
        finally:
            consumer.close()

    return read


def drain_rows(rows) -> None:
    """What Spark costs before any Kafka client sees a Row."""
    for _ in rows:
        pass


def drain_batches(batches):
    """What Spark costs before any Kafka client sees an Arrow batch."""
    import pyarrow as pa

    n = sum(batch.num_rows for batch in batches)
    yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])


def spark_session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("bench_spark")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "3g").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.log.level", "ERROR")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


# ---------------------------------------------------------------------------------------------
# CPU seconds of the processes a job runs in, read from /proc (Linux)

CLK_TCK = os.sysconf("SC_CLK_TCK")
KAFKA_MAIN = "kafka.Kafka"  # the Apache Kafka broker JVM's main class
SPARK_MAIN = "org.apache.spark.deploy.SparkSubmit"  # PySpark's JVM (the py4j gateway)
#: what a result row stores (``cpu_s``), with the table's column headings
CPU_COLUMNS = {"broker": "broker CPU s", "spark_jvm": "Spark JVM CPU s",
               "python_workers": "Python workers CPU s", "machine": "machine CPU s"}
CPU_KEYS = tuple(CPU_COLUMNS)
PROCESS_GROUPS = ("driver", "broker", "spark_jvm", "python_workers")


def proc_argv(pid: int) -> list[str]:
    """The command line of ``pid`` (empty when it is gone, or a kernel thread)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return []
    return [arg.decode(errors="replace") for arg in raw.split(b"\0") if arg]


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine since boot, from the first line of /proc/stat:
    user, nice, system, irq and softirq; not idle or iowait, not steal (time the hypervisor
    gave to another guest), not guest and guest_nice (already counted in user and nice)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = (fields + [0] * 7)[:7]
    return (user + nice + system + irq + softirq) / CLK_TCK


class ProcCpu(NamedTuple):
    """One process's CPU seconds so far, as a group counts them."""

    ppid: int
    own: float  # its own threads (utime + stime)
    waited: float  # its children that ended and were waited for (cutime + cstime)


def cpu_snapshot(root: int | None = None, kafka_main: str = KAFKA_MAIN,
                 spark_main: str = SPARK_MAIN) -> dict[str, Any]:
    """CPU seconds used so far: ``{"machine": seconds, group: {pid: ProcCpu} or None}`` for
    the groups

    - ``driver``: ``root`` itself (default this process: the PySpark driver);
    - ``broker``: the processes under ``root`` whose command line has ``kafka_main`` (the
      Apache Kafka JVMs this benchmark started); None when there is none (``--bootstrap``);
    - ``spark_jvm``: the process under ``root`` whose command line has ``spark_main`` (Spark's
      JVM: under ``local[2]`` driver and executors in one), its own threads; None without one;
    - ``python_workers``: every process under that JVM (``pyspark.daemon``, the workers it
      forks, the data source planner and streaming source processes), and the workers that
      the JVM waited for (its ``waited``, not its ``own``); None without a Spark JVM.

    Only processes under ``root``: another session or broker on the machine is not counted
    (only in ``machine``). ``cpu_diff`` turns snapshots into CPU seconds used between them.
    """
    root = os.getpid() if root is None else root
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := proc_stat(int(name))) is not None:
            stats[int(name)] = stat
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in stats.items():
        children.setdefault(ppid, []).append(pid)

    def under(pid: int) -> list[int]:
        """The processes under ``pid``, each after its parent."""
        found, todo = [], list(children.get(pid, ()))
        while todo:
            found.append(todo.pop())
            todo.extend(children.get(found[-1], ()))
        return found

    groups: dict[str, dict[int, ProcCpu]] = {key: {} for key in PROCESS_GROUPS}
    if root in stats:
        groups["driver"][root] = ProcCpu(stats[root][0], stats[root][1], 0.0)
    jvms = []
    for pid in under(root):
        argv = proc_argv(pid)
        if kafka_main in argv:
            groups["broker"][pid] = ProcCpu(*stats[pid])
        elif spark_main in argv:
            jvms.append(pid)
    for jvm in jvms:
        if jvm in groups["python_workers"]:  # under a JVM found before
            continue
        ppid, own, waited = stats[jvm]
        groups["spark_jvm"][jvm] = ProcCpu(ppid, own, 0.0)
        groups["python_workers"][jvm] = ProcCpu(ppid, 0.0, waited)
        for pid in under(jvm):
            groups["python_workers"][pid] = ProcCpu(*stats[pid])
    snapshot: dict[str, Any] = {"machine": machine_cpu()}
    snapshot.update({key: pids or None for key, pids in groups.items()})
    return snapshot


def cpu_diff(*snapshots: dict[str, Any]) -> dict[str, float | None]:
    """CPU seconds used from the first of ``snapshots`` to the last, by group (None: a group
    none of them found). A process counts with what it used up to the last snapshot that saw
    it; one that ended also with the rest, where its parent waited for it (the parent's
    ``waited`` grew by the child's total, of which the part seen is not counted twice). The
    snapshots between the ends matter: PySpark's daemon ignores SIGCHLD, so the workers it
    forks are reaped by the kernel and their CPU reaches no parent; a worker that ends during
    the job keeps what it had used at the last snapshot that saw it."""
    first, last = snapshots[0], snapshots[-1]
    used: dict[str, float | None] = {"machine": last["machine"] - first["machine"]}
    for key in PROCESS_GROUPS:
        if all(s[key] is None for s in snapshots):
            used[key] = None
            continue
        seen: dict[int, ProcCpu] = {}  # every process, as the last snapshot that saw it
        for snap in snapshots:
            seen.update(snap[key] or {})
        base, now = first[key] or {}, last[key] or {}
        # what was seen of the processes that ended, by parent: counted already, so not
        # again in what their parent's ``waited`` grew by when it waited for them
        ended: dict[int, float] = {}
        for pid, proc in seen.items():
            if pid not in now:
                ended[proc.ppid] = ended.get(proc.ppid, 0.0) + proc.own + proc.waited
        total = 0.0
        for pid, proc in seen.items():
            before = base.get(pid, ProcCpu(0, 0.0, 0.0))
            total += proc.own - before.own
            total += max(0.0, proc.waited - before.waited - ended.get(pid, 0.0))
        used[key] = total
    return used


class CpuMeter:
    """``with CpuMeter() as meter: job()``, then ``meter.used``: ``cpu_diff`` of snapshots
    at the start, at the end and every ``interval`` seconds between (in a thread), so that a
    Python worker that ends during the job still counts (up to its last snapshot).
    A snapshot reads /proc/<pid>/stat of every process: under a millisecond."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.snapshots: list[dict[str, Any]] = []
        self.used: dict[str, float | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="cpu-meter", daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.snapshots.append(cpu_snapshot())

    def __enter__(self) -> CpuMeter:
        self.snapshots.append(cpu_snapshot())
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.snapshots.append(cpu_snapshot())
        self.used = cpu_diff(*self.snapshots)


# ---------------------------------------------------------------------------------------------
# Spark alone: a Python data source that takes the Arrow batches and writes nothing

class NullCommit(WriterCommitMessage):
    """What one write task counted."""

    def __init__(self, rows: int) -> None:
        self.rows = rows


class NullArrowWriter(DataSourceArrowWriter):
    """Counts the rows of the Arrow batches Spark hands to Python; checks the total."""

    def __init__(self, expected_rows: int) -> None:
        self.expected_rows = expected_rows

    def write(self, iterator: Iterator[Any]) -> NullCommit:
        return NullCommit(sum(batch.num_rows for batch in iterator))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        rows = sum(m.rows for m in messages if isinstance(m, NullCommit))
        if self.expected_rows >= 0 and rows != self.expected_rows:
            raise RuntimeError(f"null_arrow_sink saw {rows} rows, not {self.expected_rows}")


class NullArrowSink(DataSource):
    """``df.write.format("null_arrow_sink").option("rows", n)``: Spark's own cost of a
    Python data source write (the same path as ``format("kafka_fast")``: Arrow batches to
    Python workers), with no Kafka client."""

    @classmethod
    def name(cls) -> str:
        return "null_arrow_sink"

    def writer(self, schema: Any, overwrite: bool) -> NullArrowWriter:
        return NullArrowWriter(int(self.options.get("rows", -1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--warmup-rows", type=int, default=200_000,
                        help="rows of one uncounted run of every job first (JIT, workers)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--micro-batches", type=int, default=5,
                        help="streaming: maxOffsetsPerTrigger is rows / this")
    parser.add_argument("--bootstrap", help="use this cluster instead of a private broker")
    parser.add_argument("--clients", action="store_true",
                        help="kafka_fast helpers vs confluent-kafka (on a private Tansu)")
    parser.add_argument("--report", action="store_true",
                        help="only regenerate the docs/spark.md table from the stored runs")
    parser.add_argument("--no-store", action="store_true", help="do not store the run")
    args = parser.parse_args()
    if args.report:
        write_report(store.DEFAULT_DIR / "spark.jsonl", ROOT / "docs" / "spark.md")
        return
    if args.clients:
        run_clients(args)
        return
    coordinate = builtin_connector.package()
    if coordinate is None:
        sys.exit("spark-sql-kafka-0-10 is not resolvable from Maven Central")
    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    cluster = None
    if args.bootstrap:
        broker, name = Broker(args.bootstrap), f"external {args.bootstrap}"
    else:
        cluster = broker = start_apache_kafka(workdir / "kafka")
        name = "Apache Kafka 4.3.1 (1 broker, local)"
    spark = builtin_connector.session(coordinate, memory="3g")
    try:
        results = run_connectors(spark, broker, args, workdir)
    finally:
        spark.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    import pyspark

    settings = {"rows": args.rows, "partitions": args.partitions, "runs": args.runs,
                "warmup_rows": args.warmup_rows,
                "micro_batches": args.micro_batches,
                "key_bytes": 10, "value_bytes": 100, "master": "local[2]",
                "spark": pyspark.__version__, "builtin_package": coordinate}
    if not args.no_store:
        path = store.append(store.DEFAULT_DIR, store.record("spark", name, settings, results))
        print(f"stored in {path}")
        write_report(path, ROOT / "docs" / "spark.md")


def run_clients(args) -> None:
    tansu = None
    if args.bootstrap:
        broker = Broker(args.bootstrap)
    else:
        tansu = broker = start_tansu()
    conf = broker.client_config()
    spark = spark_session()
    try:
        run_all(spark, broker, conf, args)
    finally:
        spark.stop()
        if tansu is not None:
            tansu.stop()


# ---------------------------------------------------------------------------------------------
# format("kafka") against format("kafka_fast")

CONNECTORS = {"built-in": "kafka", "kafka_fast": "kafka_fast"}
#: batch write jobs without a Kafka client, timed with the connectors: Spark's own cost of the
#: Python data source path. They write nothing, so they are in no same-rows check.
SPARK_ALONE_LABEL = "Spark alone (Python sink, no client)"
SPARK_ALONE = {SPARK_ALONE_LABEL: NullArrowSink.name()}
CASES = ("batch write", "batch read", "streaming read+write", "streaming micro-batches")


def fingerprint(df, columns: list[str]) -> tuple[int, int]:
    """(rows, sum of xxhash64 over ``columns``): equal for equal multisets of rows."""
    row = df.agg(F.count("*").alias("n"),
                 F.sum(F.xxhash64(*columns).cast("decimal(38,0)")).alias("h")).collect()[0]
    return row.n, int(row.h or 0)


def run_connectors(spark, broker, args, workdir: Path) -> list[dict]:
    """Every job with both connectors: one uncounted warm-up round of ``--warmup-rows``
    rows, then ``--runs`` interleaved rounds; the median of each job."""
    spark.dataSource.register(NullArrowSink)
    if args.warmup_rows:
        print(f"warm-up with {args.warmup_rows:,} rows (not counted)", flush=True)
        warm = argparse.Namespace(**{**vars(args), "rows": args.warmup_rows, "runs": 1})
        measure_connectors(spark, broker, warm, workdir)
        print("measured runs", flush=True)
    return measure_connectors(spark, broker, args, workdir)


def measure_connectors(spark, broker, args, workdir: Path) -> list[dict]:
    n, parts, bootstrap = args.rows, args.partitions, broker.bootstrap
    per_trigger = max(1, n // args.micro_batches)
    df = spark.range(n, numPartitions=parts).select(
        F.expr("cast(lpad(cast(id % 100000 as string), 10, 'k') as binary)").alias("key"),
        F.expr("cast(lpad(cast(id as string), 100, 'v') as binary)").alias("value"),
    ).cache()
    assert df.count() == n
    want_written = fingerprint(df, ["key", "value"])

    def fresh_topic() -> str:
        topic = f"bench-spark-{uuid.uuid4().hex[:10]}"
        create_topic(broker, topic, parts)
        return topic

    def written(topic: str) -> tuple[int, int]:
        return fingerprint(spark.read.format("kafka_fast")
                           .option("kafka.bootstrap.servers", bootstrap)
                           .option("subscribe", topic).load(), ["key", "value"])

    times: dict[tuple[str, str], list[float]] = {}
    prints: dict[tuple[str, str], set] = {}
    cpus: dict[tuple[str, str], list[dict[str, float | None]]] = {}

    def note(case: str, who: str, seconds: float, result: tuple | None,
             cpu: dict[str, float | None]) -> None:
        times.setdefault((case, who), []).append(seconds)
        cpus.setdefault((case, who), []).append(cpu)
        if result is not None:
            prints.setdefault((case, who), set()).add(result)
        shown = ", ".join(f"{key} {'-' if cpu.get(key) is None else format(cpu[key], '.2f')}"
                          for key in CPU_KEYS)
        print(f"{case:23s} {who:37s} {n / seconds:12,.0f} rows/s {seconds:7.2f} s"
              + (f"  CPU s: {shown}" if cpu else ""), flush=True)

    source = None
    for _ in range(args.runs):  # interleaved runs
        for who, fmt in CONNECTORS.items():
            topic = fresh_topic()
            with CpuMeter() as meter:
                seconds = timed(lambda fmt=fmt, topic=topic: df.write.format(fmt).option(
                    "kafka.bootstrap.servers", bootstrap).option("topic", topic)
                    .mode("append").save())
            got = written(topic)
            assert got == want_written, (who, got, want_written)
            note("batch write", who, seconds, got, meter.used)
            source = source or topic
        for who, fmt in SPARK_ALONE.items():
            # nothing written, nothing to compare (the sink's commit checks it saw n rows)
            with CpuMeter() as meter:
                seconds = timed(lambda fmt=fmt: df.write.format(fmt).option("rows", str(n))
                                .mode("append").save())
            note("batch write", who, seconds, None, meter.used)
        for who, fmt in CONNECTORS.items():
            reader = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                      .option("subscribe", source))
            box: list = []
            with CpuMeter() as meter:
                seconds = timed(lambda reader=reader, box=box: box.append(fingerprint(
                    reader.load(), ["partition", "offset", "key", "value", "timestamp"])))
            assert box[0][0] == n, (who, box)
            note("batch read", who, seconds, box[0], meter.used)
        for who, fmt in CONNECTORS.items():
            target = fresh_topic()
            stream = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", bootstrap)
                      .option("subscribe", source).option("startingOffsets", "earliest")
                      .option("maxOffsetsPerTrigger", str(per_trigger))
                      .load().select("key", "value"))
            progress: list = []
            checkpoint = workdir / f"ckpt-{uuid.uuid4().hex[:8]}"

            def job(stream=stream, fmt=fmt, target=target, checkpoint=checkpoint,
                    progress=progress) -> None:
                query = (stream.writeStream.format(fmt)
                         .option("kafka.bootstrap.servers", bootstrap)
                         .option("topic", target).option("checkpointLocation", str(checkpoint))
                         .trigger(availableNow=True).start())
                query.awaitTermination()
                assert query.exception() is None, query.exception()
                progress.extend(query.recentProgress)

            with CpuMeter() as meter:
                seconds = timed(job)
            got = written(target)
            assert got == want_written, (who, got, want_written)
            note("streaming read+write", who, seconds, got, meter.used)
            # Spark's own time for the micro-batches (triggerExecution), without the query's
            # start: the rate a running query keeps up with. No CPU figures of its own: they
            # are the query's (the row above).
            batches = [p for p in progress if p["numInputRows"]]
            assert sum(p["numInputRows"] for p in batches) == n, (who, len(batches))
            triggers = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
            note("streaming micro-batches", who, triggers, got, {})

    df.unpersist()
    results = []
    for case in CASES:
        # the same rows: the two connectors' jobs, never the Spark-alone ones
        same = prints[(case, "built-in")] == prints[(case, "kafka_fast")]
        assert same, (case, prints[(case, "built-in")], prints[(case, "kafka_fast")])
        base = n / statistics.median(times[(case, "built-in")])
        for who in [*CONNECTORS, *(SPARK_ALONE if case == "batch write" else ())]:
            seconds = statistics.median(times[(case, who)])
            row = {"case": case, "connector": who, "rows": n,
                   "seconds": round(seconds, 3), "rows_per_s": round(n / seconds),
                   "vs_builtin": round(n / seconds / base, 2),
                   "same_rows_as_builtin": same if who in CONNECTORS else None,
                   "samples_s": [round(t, 3) for t in times[(case, who)]]}
            cpu = median_cpu(cpus[(case, who)])
            if cpu is not None:
                row["cpu_s"] = cpu
            results.append(row)
    return results


def median_cpu(samples: list[dict[str, float | None]]) -> dict[str, float | None] | None:
    """``cpu_s`` of a result row: the median over the runs of each of ``CPU_KEYS`` (None
    where a run has none, e.g. the broker of a ``--bootstrap`` cluster); None when the
    runs measured no CPU."""
    if not samples or not all(samples):
        return None
    out: dict[str, float | None] = {}
    for key in CPU_KEYS:
        values = [s.get(key) for s in samples]
        out[key] = (None if any(v is None for v in values)
                    else round(statistics.median(v for v in values if v is not None), 2))
    return out


TABLE_START = "<!-- spark-bench: generated by benchmarks/bench_spark.py -->"
TABLE_END = "<!-- /spark-bench -->"


def render_table(run: dict) -> str:
    """The Markdown table (and caption) of one stored run."""
    s, m = run["settings"], run["machine"]
    lines = ["| job | connector | rows/s | seconds | vs built-in | same rows | "
             + " | ".join(CPU_COLUMNS.values()) + " |",
             "|---|---|---:|---:|---:|---|" + "---:|" * len(CPU_COLUMNS)]
    for r in run["results"]:
        same = r["same_rows_as_builtin"]
        cpu = r.get("cpu_s") or {}
        lines.append(f"| {r['case']} | {r['connector']} | {r['rows_per_s']:,} | "
                     f"{r['seconds']:.2f} | {r['vs_builtin']:.2f}x | "
                     f"{'n/a' if same is None else 'yes' if same else 'NO'} | "
                     + " | ".join("" if cpu.get(key) is None else f"{cpu[key]:.2f}"
                                  for key in CPU_COLUMNS) + " |")
    measured = any(r.get("cpu_s") for r in run["results"])
    lines += ["", f"Run of {run['time'][:10]} at commit `{run['commit'] or 'unknown'}` on "
              f"{run['broker']}: {s['rows']:,} rows ({s['key_bytes']}-byte keys, "
              f"{s['value_bytes']}-byte values), {s['partitions']} partitions, Spark "
              f"{s['spark']} {s['master']}, built-in connector `{s['builtin_package']}`, "
              f"median of {s['runs']} after a {s.get('warmup_rows', 0):,}-row warm-up round; "
              + (f"streaming with maxOffsetsPerTrigger {s['rows'] // s['micro_batches']:,} "
                 f"({s['micro_batches']} micro-batches; the micro-batch row counts Spark's "
                 "triggerExecution time only, without the query's start); "
                 if s.get("micro_batches") else "")
              + f"{m['cpus']} CPUs ({m['cpu']}), Python {m['python']}."
              + (" CPU columns: CPU seconds used during the job (median of the runs, from "
                 "/proc) by the broker's JVM, Spark's JVM (driver and executors), PySpark's "
                 "Python worker processes, and the whole machine (everything running on it); "
                 "the micro-batch rows have none of their own (their query is the "
                 "read+write row). The Spark alone row writes to a Python data source that "
                 "only counts the rows: no client, nothing written to compare."
                 if measured else
                 " This run did not measure CPU (the CPU columns are blank).")]
    bound = write_bound(run)
    if bound is not None:
        seconds, ratio = bound
        lines += ["", f"Batch write bound: a client that cost no CPU at all would still leave "
                  f"the Spark alone row's Spark JVM and Python workers CPU plus the kafka_fast "
                  f"row's broker CPU to the {m['cpus']} CPUs: at least {seconds:.2f} s, "
                  f"{ratio:.2f}x the built-in's rows/s at most in this run."]
    return "\n".join(lines)


def write_bound(run: dict) -> tuple[float, float] | None:
    """``(seconds, x built-in)``: the fastest a batch write through the kafka_fast data
    source could be in ``run`` with a client that used no CPU (Spark's own share of the path,
    from the Spark alone row, and the broker's, from the kafka_fast row, spread over every
    CPU); None when the run lacks the figures."""
    rows = {(r["case"], r["connector"]): r for r in run["results"]}
    alone = (rows.get(("batch write", SPARK_ALONE_LABEL)) or {}).get("cpu_s") or {}
    ours = (rows.get(("batch write", "kafka_fast")) or {}).get("cpu_s") or {}
    builtin = rows.get(("batch write", "built-in"))
    parts = (alone.get("spark_jvm"), alone.get("python_workers"), ours.get("broker"))
    if builtin is None or any(p is None for p in parts):
        return None
    seconds = sum(parts) / run["machine"]["cpus"]
    return seconds, builtin["seconds"] / seconds


def write_report(results: Path, doc: Path) -> None:
    """Replace the generated block of ``doc`` with the table of the newest stored run."""
    run = store.load(results)[-1]
    text = doc.read_text(encoding="utf-8")
    block = re.compile(re.escape(TABLE_START) + r"\n.*?" + re.escape(TABLE_END), re.S)
    if not block.search(text):
        raise SystemExit(f"{doc} has no {TABLE_START} ... {TABLE_END} block")
    new = block.sub(lambda _: f"{TABLE_START}\n{render_table(run)}\n{TABLE_END}", text)
    doc.write_text(new, encoding="utf-8")
    print(render_table(run))


def run_all(spark: SparkSession, broker: Broker, conf: dict, args) -> None:
    n, parts = args.rows, args.partitions
    df = spark.range(n, numPartitions=parts).select(
        F.expr("cast(lpad(cast(id % 100000 as string), 10, 'k') as binary)").alias("key"),
        F.expr("cast(lpad(cast(id as string), 100, 'v') as binary)").alias("value"),
    ).cache()
    assert df.count() == n

    def fresh_topic() -> str:
        topic = f"bench-spark-{uuid.uuid4().hex[:10]}"
        create_topic(broker, topic, parts)
        return topic

    writers = {
        "kafka_fast foreach_partition_writer": lambda t: df.foreachPartition(
            foreach_partition_writer(conf, t, key_col="key")),
        "kafka_fast write_kafka (Arrow)": lambda t: write_kafka(df, conf, t, key_col="key"),
        "confluent produce() in foreachPartition": lambda t: df.foreachPartition(
            confluent_foreach_partition(conf, t)),
        "confluent produce() in mapInArrow": lambda t: df.mapInArrow(
            confluent_map_in_arrow(conf, t), "sent long").collect(),
        "(Spark alone: foreachPartition over Rows)": lambda t: df.foreachPartition(drain_rows),
        "(Spark alone: mapInArrow over batches)": lambda t: df.mapInArrow(
            drain_batches, "n long").collect(),
    }
    write_times: dict[str, list[float]] = {name: [] for name in writers}
    topics = []
    for _ in range(args.runs):  # interleaved runs
        for name, job in writers.items():
            topic = fresh_topic()
            write_times[name].append(timed(lambda job=job, topic=topic: job(topic)))
            topics.append(topic)
    report("write", n, write_times, "confluent produce() in foreachPartition")

    source = topics[0]
    ranges = offset_ranges(conf, source)
    assert sum(r.size for r in ranges) == n, ranges
    tasks = split_ranges(ranges, None)

    def aggregate(frame) -> None:
        row = frame.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("b")).collect()[0]
        assert row.n == n and row.b == 100 * n, row

    def confluent_read() -> None:
        rows = [(r.topic, r.partition, r.start, r.end) for r in tasks]
        rdd = spark.sparkContext.parallelize(rows, len(rows)).mapPartitions(
            confluent_range_reader(conf))
        aggregate(spark.createDataFrame(rdd, KAFKA_SCHEMA))

    readers = {
        "kafka_fast read_kafka": lambda: aggregate(read_kafka(spark, conf, source)),
        "kafka_fast ranges_to_dataframe": lambda: aggregate(
            ranges_to_dataframe(spark, conf, tasks)),
        "confluent consume() in mapPartitions": confluent_read,
    }
    read_times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(args.runs):
        for name, job in readers.items():
            read_times[name].append(timed(job))
    report("read", n, read_times, "confluent consume() in mapPartitions")


def report(what: str, n: int, times: dict[str, list[float]], baseline: str) -> None:
    base = n / statistics.median(times[baseline])
    print(f"\n{what}: {n:,} rows, Spark local[2], median of {len(times[baseline])} runs")
    print(f"{'job':44s} {'rows/s':>12s} {'seconds':>9s} {'vs baseline':>12s}")
    for name, samples in times.items():
        rate = n / statistics.median(samples)
        print(f"{name:44s} {rate:12,.0f} {statistics.median(samples):9.2f} {rate / base:11.2f}x")


if __name__ == "__main__":
    main()
