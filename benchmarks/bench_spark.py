"""Spark local[2] on Kafka: the kafka_fast data source against Spark's built-in connector.

Default: ``format("kafka")`` (``spark-sql-kafka-0-10`` from Maven Central) and
``format("kafka_fast")`` side by side on one Apache Kafka broker (the test harness's), with
``--rows`` rows of 10-byte keys and 100-byte values in fresh ``--partitions``-partition
topics, three jobs each:

- batch write (``df.write``), batch read (``spark.read`` and an aggregation over every
  column), and streaming (``readStream`` -> ``writeStream`` at a processingTime trigger of
  ``--trigger-ms`` with ``maxOffsetsPerTrigger`` ``--trigger-rows``, stopped once every row
  went through; its rate is the steady state: the micro-batches after the first
  ``--skip-batches``, rows over the span from the first one's start to the last one's end,
  with the p50/p99 of their ``triggerExecution`` time);
- the built-in connector at its best: ``--tune`` (default) first runs every candidate of
  ``BUILTIN_WRITE_CANDIDATES`` / ``BUILTIN_READ_CANDIDATES`` once and the measured rounds use
  the fastest (stored with the run, with every candidate's rate); both connectors write with
  ``COMMON_OPTIONS`` (acks, compression);
- one uncounted warm-up round, then ``--runs`` interleaved rounds (the connectors' order
  alternating); the median of each job.

Each job's result is checked to be the same rows for both connectors (count and a sum of
xxhash64 over partition, offset, key, value and timestamp for reads; over key and value for
what was written). The batch write also runs with a Python data source that only counts the
rows (``null_arrow_sink``: Spark's own cost of the Python data source path, no client); the
batch read also runs with a Python data source that yields prebuilt Arrow batches of the read's
schema and row count in as many tasks as kafka_fast's read plans (``null_arrow_source``: the
most a Python data source read yields, no client); the streaming job also runs with a Python
stream source that yields prebuilt Arrow batches of the Kafka read's schema and a Python stream
sink that counts them (``null_stream``, ``STREAM_ALONE``: the Python streaming data source
API's own cost per micro-batch), and from the built-in source into that sink. Each streaming
job stores the median of each micro-batch phase (``PHASES``: Spark's ``durationMs``). For
every job the CPU seconds of the broker's JVM, Spark's JVM, PySpark's Python workers and the
whole machine are read from /proc (``cpu_snapshot``, ``CpuMeter``), also per million rows.
CPU used by other processes during the jobs labels the run as from a loaded machine
(``--machine-state`` overrides). The run is appended to docs/bench/results/spark.jsonl and
docs/spark.md's table and chart are regenerated from the stored runs by
``benchmarks/spark_report.py`` (``--report`` only regenerates).

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

    python benchmarks/bench_spark.py [--rows 1000000] [--runs 3] [--partitions 4]
    python benchmarks/bench_spark.py --cases streaming --no-tune   # some jobs, not stored
    python benchmarks/bench_spark.py --report          # docs table and chart, stored runs
    python benchmarks/bench_spark.py --clients         # helpers vs confluent-kafka
"""

from __future__ import annotations

import argparse
import compileall
import os
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
sys.path.insert(0, str(ROOT / "benchmarks"))

import builtin_connector  # noqa: E402
import spark_report  # noqa: E402
from harness import create_topic, start_apache_kafka, start_tansu  # noqa: E402
from harness.brokers import Broker  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.datasource import (  # noqa: E402
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows  # noqa: E402

import kafka_fast  # noqa: E402
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
    # Spark's Python workers import kafka_fast from the source tree: give them the bytecode an
    # installed package has, also where PYTHONDONTWRITEBYTECODE is set.
    compileall.compile_dir(str(Path(kafka_fast.__file__).parent), quiet=1)
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
#: broker processes not under this one that count as the broker (``--broker-pid``)
BROKER_PIDS: set[int] = set()


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
    for pid in BROKER_PIDS:
        if pid in stats:
            groups["broker"][pid] = ProcCpu(*stats[pid])
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
        self.times: list[float] = []  # time.time() of each snapshot
        self.used: dict[str, float | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="cpu-meter", daemon=True)

    def _take(self) -> None:
        self.times.append(time.time())
        self.snapshots.append(cpu_snapshot())

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def __enter__(self) -> CpuMeter:
        self._take()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()
        self.used = cpu_diff(*self.snapshots)

    def used_between(self, start: float, end: float) -> tuple[float, dict[str, float | None]]:
        """``(seconds, cpu_diff)`` over the snapshots taken from ``start`` to ``end``
        (``time.time()`` values): the first at or before ``start`` to the first at or after
        ``end``, so the span covers the window (it may be up to ``interval`` wider)."""
        first = max([i for i, t in enumerate(self.times) if t <= start], default=0)
        last = min([i for i, t in enumerate(self.times) if t >= end],
                   default=len(self.times) - 1)
        last = max(last, first + 1) if len(self.times) > 1 else last
        return (self.times[last] - self.times[first],
                cpu_diff(*self.snapshots[first:last + 1]))


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


# ---------------------------------------------------------------------------------------------
# Spark alone, reading: Python sources that make rows (a stream source and a batch source), the
# Python data source API's own cost with no client

class NullRowsPartition(InputPartition):
    """Rows ``[start, end)`` of a made-up source."""

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end


def null_partitions(first: int, last: int, tasks: int) -> list[InputPartition]:
    """Rows ``[first, last)`` in ``tasks`` tasks of as equal a size as the step allows."""
    step = -(-(last - first) // tasks) or 1
    return [NullRowsPartition(i, min(i + step, last)) for i in range(first, last, step)]


def null_batches(partition: InputPartition, template: Any) -> Iterator[Any]:
    """The rows of ``partition`` as slices of the prebuilt Arrow batch ``template`` (no
    column is built per batch)."""
    assert isinstance(partition, NullRowsPartition)
    chunk = template.num_rows
    for i in range(partition.start, partition.end, chunk):
        yield template.slice(0, min(chunk, partition.end - i))


def kafka_batch(rows: int) -> Any:
    """``rows`` rows in the Arrow schema of a Kafka read (``reader.arrow_schema``): 10-byte
    keys, 100-byte values, one topic and partition, consecutive offsets."""
    import numpy as np
    import pyarrow as pa

    from kafka_fast.spark.reader import arrow_schema

    schema = arrow_schema()
    columns = {"key": pa.array([b"k" * 10] * rows, pa.binary()),
               "value": pa.array([b"v" * 100] * rows, pa.binary()),
               "topic": pa.array(["null"] * rows, pa.string()),
               "partition": pa.array(np.zeros(rows, np.int32)),
               "offset": pa.array(np.arange(rows, dtype=np.int64)),
               "timestamp": pa.array(np.full(rows, 1_700_000_000_000_000, np.int64)
                                     .view("datetime64[us]"), schema.field("timestamp").type),
               "timestampType": pa.array(np.zeros(rows, np.int32))}
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)


class NullStreamReader(DataSourceStreamReader):
    """Offsets ``{"row": n}`` up to ``rows``; a micro-batch's rows are split into
    ``partitions`` tasks, each yielding Arrow batches in the schema of a Kafka read (10-byte
    keys, 100-byte values): Spark moves every column of a source's schema from the Python
    task, as it does kafka_fast's."""

    CHUNK = 10_000

    def __init__(self, rows: int, per_trigger: int, partitions: int) -> None:
        self.rows, self.per_trigger, self.parts = rows, per_trigger, partitions

    def initialOffset(self) -> dict:
        return {"row": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.per_trigger)

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        most = limit.max_rows if isinstance(limit, ReadMaxRows) else self.rows
        return {"row": min(self.rows, int(start["row"]) + most)}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        return null_partitions(int(start["row"]), int(end["row"]), self.parts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return null_batches(partition, kafka_batch(self.CHUNK))

    def commit(self, end: dict) -> None:
        pass


class NullBatchReader(DataSourceReader):
    """``rows`` rows in ``partitions`` tasks, each yielding Arrow batches of
    ``BATCH_RECORDS`` rows (what kafka_fast's read asks of one ``consume_batch``) in the
    schema of a Kafka read."""

    def __init__(self, rows: int, partitions: int) -> None:
        self.rows, self.parts = rows, partitions

    def partitions(self) -> list[InputPartition]:
        return null_partitions(0, self.rows, self.parts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from kafka_fast.spark.reader import BATCH_RECORDS

        return null_batches(partition, kafka_batch(BATCH_RECORDS))


class NullArrowSource(DataSource):
    """``read.format("null_arrow_source").option("rows", n).option("partitions", tasks)``:
    Spark's own cost of a Python data source read (the path of ``format("kafka_fast")``:
    a Python worker per task yielding Arrow batches), with no Kafka client."""

    @classmethod
    def name(cls) -> str:
        return "null_arrow_source"

    def schema(self) -> Any:
        from kafka_fast.spark.datasource import kafka_schema

        return kafka_schema()

    def reader(self, schema: Any) -> NullBatchReader:
        return NullBatchReader(int(self.options["rows"]), int(self.options["partitions"]))


class NullStreamWriter(DataSourceStreamArrowWriter):
    """Counts the rows of the Arrow batches of each micro-batch's tasks."""

    def write(self, iterator: Iterator[Any]) -> NullCommit:
        return NullCommit(sum(batch.num_rows for batch in iterator))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        pass


class NullStream(DataSource):
    """``readStream.format("null_stream").option("rows", n)`` (with ``triggerRows``,
    ``partitions``: tasks per micro-batch) and ``writeStream.format("null_stream")``: the Python streaming data
    source path (source process, planning, Python tasks, the sink's commit) with no Kafka
    client on either side. Other options are ignored."""

    @classmethod
    def name(cls) -> str:
        return "null_stream"

    def schema(self) -> Any:
        from kafka_fast.spark.datasource import kafka_schema

        return kafka_schema()

    def streamReader(self, schema: Any) -> NullStreamReader:
        return NullStreamReader(int(self.options["rows"]),
                                int(self.options.get("triggerRows", 100_000)),
                                int(self.options.get("partitions", 4)))

    def streamWriter(self, schema: Any, overwrite: bool) -> NullStreamWriter:
        return NullStreamWriter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup-rows", type=int, default=200_000,
                        help="rows of one uncounted round of every job first (JIT, workers)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--driver-memory", default="3g",
                        help="Spark's driver (and, on local[2], executor) memory: the rows are "
                             "cached in it (10M rows: 6g)")
    parser.add_argument("--trigger-ms", type=int, default=200,
                        help="streaming: the processingTime trigger interval")
    parser.add_argument("--trigger-rows", type=int, default=100_000,
                        help="streaming: maxOffsetsPerTrigger (rows of one micro-batch)")
    parser.add_argument("--skip-batches", type=int, default=2,
                        help="streaming: micro-batches after the query's start left out of "
                             "the steady state")
    parser.add_argument("--tune", action=argparse.BooleanOptionalAction, default=True,
                        help="try every built-in setting candidate first and measure the "
                             "built-in connector with the best (else its first candidates)")
    parser.add_argument("--tune-rows", type=int, default=1_000_000,
                        help="rows of each tuning job (at most --rows)")
    parser.add_argument("--machine-state", choices=("auto", "quiet", "loaded"), default="auto",
                        help="label of the stored run; auto: loaded when processes other than "
                             f"the benchmark's used over {LOADED_SHARE * 100:.0f}%% of the CPUs")
    parser.add_argument("--bootstrap", help="use this cluster instead of a private broker")
    parser.add_argument("--broker-pid", type=int, action="append", default=[],
                        help="a --bootstrap broker process whose CPU counts as the broker's")
    parser.add_argument("--broker-name", help="what the stored run calls the --bootstrap "
                        "cluster (default: external <bootstrap>)")
    parser.add_argument("--clients", action="store_true",
                        help="kafka_fast helpers vs confluent-kafka (on a private Tansu)")
    parser.add_argument("--report", action="store_true",
                        help="only regenerate the docs/spark.md table and chart from the "
                             "stored runs")
    parser.add_argument("--no-store", action="store_true", help="do not store the run")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES),
                        help="only these jobs (a run of fewer is not stored; without both "
                             "batch jobs the built-in connector is not tuned)")
    parser.add_argument("--builtin-write", type=int, default=0,
                        choices=range(len(BUILTIN_WRITE_CANDIDATES)),
                        help="without tuning: the built-in's write candidate (index)")
    parser.add_argument("--builtin-read", type=int, default=0,
                        choices=range(len(BUILTIN_READ_CANDIDATES)),
                        help="without tuning: the built-in's read candidate (index)")
    args = parser.parse_args()
    if set(args.cases) != set(CASES):
        args.no_store = True
    if args.report:
        spark_report.write_report(store.DEFAULT_DIR / "spark.jsonl")
        return
    if args.clients:
        run_clients(args)
        return
    coordinate = builtin_connector.package()
    if coordinate is None:
        sys.exit("spark-sql-kafka-0-10 is not resolvable from Maven Central")
    BROKER_PIDS.update(args.broker_pid)
    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    cluster = None
    load_before = os.getloadavg()
    if args.bootstrap:
        broker = Broker(args.bootstrap)
        name = args.broker_name or f"external {args.bootstrap}"
    else:
        cluster = broker = start_apache_kafka(workdir / "kafka")
        name = f"Apache Kafka {cluster.version} (1 broker, local)"
    spark = builtin_connector.session(coordinate, memory=args.driver_memory)
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    started = time.monotonic()
    try:
        results, chosen, tuning, other_share = run_connectors(spark, broker, args, workdir)
    finally:
        spark.stop()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    import pyspark

    state = args.machine_state
    if state == "auto":
        state = "loaded" if other_share > LOADED_SHARE else "quiet"
    settings = {
        "format": 2, "rows": args.rows, "partitions": args.partitions, "runs": args.runs,
        "warmup_rows": args.warmup_rows, "key_bytes": 10, "value_bytes": 100,
        "master": "local[2]", "driver_memory": args.driver_memory,
        "spark": pyspark.__version__, "builtin_package": coordinate,
        "session_conf": SESSION_CONF,
        "trigger_ms": args.trigger_ms, "trigger_rows": args.trigger_rows,
        "skip_batches": args.skip_batches,
        "options": {"built-in": chosen, "kafka_fast": KAFKA_FAST_OPTIONS},
        "tuning": tuning, "tune_rows": min(args.tune_rows, args.rows) if args.tune else None,
        "machine_state": state, "other_cpu_share": round(other_share, 3),
        "load_average_before": [round(x, 2) for x in load_before],
        "wall_s": round(time.monotonic() - started, 1),
    }
    print(f"machine: {state} (other processes used {other_share:.0%} of the CPUs)")
    if not args.no_store:
        path = store.append(store.DEFAULT_DIR, store.record("spark", name, settings, results))
        print(f"stored in {path}")
        spark_report.write_report(path)

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
#: batch jobs without a Kafka client, timed with the connectors: Spark's own cost of the
#: Python data source path. They write nothing / read made-up rows, so they are in no
#: same-rows check.
SPARK_ALONE = {spark_report.SPARK_ALONE_LABEL: NullArrowSink.name()}
READ_ALONE = {spark_report.READ_ALONE_LABEL: NullArrowSource.name()}
CASES = ("batch write", "batch read", "streaming")
#: session settings of the run (both connectors): enough progress kept for every micro-batch
SESSION_CONF = {"spark.sql.streaming.numRecentProgressUpdates": "100000"}
#: options both connectors get: the same records on the wire, acknowledged alike
COMMON_OPTIONS = {"kafka.acks": "all", "kafka.compression.type": "none"}
#: kafka_fast's options by job (its defaults otherwise: linger.ms 5, batch.size 1000000,
#: batch.num.messages 10000, fetch.max.bytes 50 MiB, max.partition.fetch.bytes 1 MiB)
KAFKA_FAST_OPTIONS: dict[str, dict[str, str]] = {
    "batch write": dict(COMMON_OPTIONS),
    "batch read": {},
    "streaming": dict(COMMON_OPTIONS),
}
#: the built-in connector's candidates by job, Spark's defaults first; ``--tune`` runs each
#: once and the measured runs use the fastest (without ``--tune``, the first of each)
BUILTIN_WRITE_CANDIDATES: dict[str, dict[str, str]] = {
    "defaults (linger 0 ms, batch 16 KiB)": {},
    "linger 5 ms, batch 256 KiB": {"kafka.linger.ms": "5", "kafka.batch.size": "262144"},
    "linger 5 ms, batch 1 MiB": {"kafka.linger.ms": "5", "kafka.batch.size": "1048576"},
    "linger 20 ms, batch 1 MiB, buffer 128 MiB": {
        "kafka.linger.ms": "20", "kafka.batch.size": "1048576",
        "kafka.buffer.memory": "134217728"},
    "linger 100 ms, batch 1 MiB, buffer 128 MiB": {
        "kafka.linger.ms": "100", "kafka.batch.size": "1048576",
        "kafka.buffer.memory": "134217728"},
}
BUILTIN_READ_CANDIDATES: dict[str, dict[str, str]] = {
    "defaults (max.poll.records 500, 1 MiB per partition)": {},
    "max.poll.records 10000": {"kafka.max.poll.records": "10000"},
    "max.poll.records 10000, 8 MiB per partition": {
        "kafka.max.poll.records": "10000", "kafka.max.partition.fetch.bytes": "8388608",
        "kafka.fetch.max.bytes": "67108864"},
    "max.poll.records 10000, 8 MiB per partition, fetch.min.bytes 1 MiB": {
        "kafka.max.poll.records": "10000", "kafka.max.partition.fetch.bytes": "8388608",
        "kafka.fetch.max.bytes": "67108864", "kafka.fetch.min.bytes": "1048576"},
    "minPartitions 8": {"minPartitions": "8"},
}
#: streaming: a query that has not read every row after this many seconds plus one second per
#: this many rows failed (10M rows: 620 s; quiet runs stream 140,000-240,000 rows/s)
STREAM_BOUND_S = 120
STREAM_FLOOR_ROWS_PER_S = 20_000
#: a micro-batch's phases (``durationMs`` of its progress), stored as the median over the
#: steady-state micro-batches: the source's offsets, planning, the write job (with the
#: sink's commit), the offset and commit logs, and the whole trigger
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit",
          "commitOffsets", "triggerExecution")
#: streaming jobs without a Kafka client, timed with the connectors: ``(source format,
#: sink format)``; ``null_stream`` is ``NullStream`` (makes rows / counts them)
STREAM_ALONE = {
    spark_report.STREAM_ALONE_LABEL: ("null_stream", "null_stream"),
    "built-in source, Python stream sink (no client)": ("kafka", "null_stream"),
}
#: a run is stored as from a loaded machine when processes other than the benchmark's
#: (broker, Spark, its Python workers, this driver) used more than this share of the CPUs
LOADED_SHARE = 0.15


def fingerprint(df, columns: list[str]) -> tuple[int, int]:
    """(rows, sum of xxhash64 over ``columns``): equal for equal multisets of rows."""
    row = df.agg(F.count("*").alias("n"),
                 F.sum(F.xxhash64(*columns).cast("decimal(38,0)")).alias("h")).collect()[0]
    return row.n, int(row.h or 0)


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values``, linear between the nearest ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def steady_state(progress: list[dict], skip: int) -> dict[str, Any]:
    """The steady state of a streaming query from its ``StreamingQueryProgress`` list: the
    micro-batches that read rows, without the first ``skip`` (the query's start, and at least
    one kept). ``rows``, ``start``/``end`` (epoch seconds: the first kept batch's trigger
    start, the last one's end), ``rows_per_s`` over that span, and ``p50_ms``/``p99_ms`` of the
    kept batches' ``triggerExecution``."""
    import datetime as dt

    def at(p: dict) -> float:
        return dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()

    data = [p for p in progress if p["numInputRows"]]
    if not data:
        raise ValueError("the query read no rows")
    kept = data[min(skip, len(data) - 1):]
    durations = [float(p["durationMs"]["triggerExecution"]) for p in kept]
    start = at(kept[0])
    end = at(kept[-1]) + durations[-1] / 1000
    rows = sum(int(p["numInputRows"]) for p in kept)
    phases = {name: round(statistics.median(float(p["durationMs"].get(name, 0)) for p in kept), 1)
              for name in PHASES}
    return {"rows": rows, "batches": len(kept), "start": start, "end": end,
            "rows_per_s": rows / (end - start), "p50_ms": percentile(durations, 50),
            "p99_ms": percentile(durations, 99), "phases_ms": phases}


class Jobs:
    """The three jobs on one broker and DataFrame, for either connector."""

    def __init__(self, spark, broker, args, workdir: Path, rows: int) -> None:
        self.spark, self.broker, self.args, self.workdir = spark, broker, args, workdir
        self.rows = rows
        self.bootstrap = broker.bootstrap
        self.df = spark.range(rows, numPartitions=args.partitions).select(
            F.expr("cast(lpad(cast(id % 100000 as string), 10, 'k') as binary)").alias("key"),
            F.expr("cast(lpad(cast(id as string), 100, 'v') as binary)").alias("value"),
        ).cache()
        assert self.df.count() == rows
        self.want = fingerprint(self.df, ["key", "value"])
        self.source: str | None = None
        self.tasks: int | None = None  # kafka_fast_tasks()

    def close(self) -> None:
        self.df.unpersist()
        if self.source is not None:
            self.drop(self.source)

    def fresh_topic(self) -> str:
        topic = f"bench-spark-{uuid.uuid4().hex[:10]}"
        create_topic(self.broker, topic, self.args.partitions)
        return topic

    def drop(self, topic: str) -> None:
        """Delete a topic checked already: a 10M-row run writes ~1.5 GB per topic."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.delete_topics([topic], operation_timeout=30).values():
            future.result(60)

    def written(self, topic: str, rows: int | None = None) -> tuple[int, int]:
        """The fingerprint of what ``topic`` holds, checked to be the DataFrame's (or, with
        ``rows``, to be that many rows)."""
        got = fingerprint(self.spark.read.format("kafka_fast")
                          .option("kafka.bootstrap.servers", self.bootstrap)
                          .option("subscribe", topic).load(), ["key", "value"])
        assert got == self.want if rows is None else got[0] == rows, (topic, got, self.want)
        return got

    def write(self, fmt: str, options: dict[str, str]) -> dict[str, Any]:
        topic = self.fresh_topic()
        with CpuMeter() as meter:
            seconds = timed(lambda: self.df.write.format(fmt)
                            .option("kafka.bootstrap.servers", self.bootstrap)
                            .options(**options).option("topic", topic).mode("append").save())
        got = self.written(topic)
        if self.source is None:
            self.source = topic  # what the reads and streams read
        else:
            self.drop(topic)
        return {"seconds": seconds, "cpu": meter.used, "print": got}

    def write_alone(self, fmt: str) -> dict[str, Any]:
        # nothing written, nothing to compare (the sink's commit checks it saw every row)
        with CpuMeter() as meter:
            seconds = timed(lambda: self.df.write.format(fmt).option("rows", str(self.rows))
                            .mode("append").save())
        return {"seconds": seconds, "cpu": meter.used, "print": None}

    def read(self, fmt: str, options: dict[str, str]) -> dict[str, Any]:
        self.ensure_source()
        assert self.source is not None
        return self.timed_read(fmt, {"kafka.bootstrap.servers": self.bootstrap, **options,
                                     "subscribe": self.source})

    def read_alone(self, fmt: str) -> dict[str, Any]:
        """A made-up source's read of as many rows in as many tasks as kafka_fast's read of
        the source topic; only its count is checked (nothing to compare)."""
        got = self.timed_read(fmt, {"rows": str(self.rows),
                                    "partitions": str(self.kafka_fast_tasks())})
        return {**got, "print": None}

    def timed_read(self, fmt: str, options: dict[str, str]) -> dict[str, Any]:
        """A batch read of ``fmt`` and the aggregation over its columns (``fingerprint``),
        timed; the row count is checked."""
        reader = self.spark.read.format(fmt).options(**options)
        box: list = []
        with CpuMeter() as meter:
            seconds = timed(lambda: box.append(fingerprint(
                reader.load(), ["partition", "offset", "key", "value", "timestamp"])))
        assert box[0][0] == self.rows, (fmt, box)
        return {"seconds": seconds, "cpu": meter.used, "print": box[0]}

    def kafka_fast_tasks(self) -> int:
        """The tasks kafka_fast's batch read of the source topic plans (its default
        ``packPartitions``: the session's parallelism), asked of the planner once."""
        if self.tasks is None:
            self.ensure_source()
            self.tasks = (self.spark.read.format("kafka_fast")
                          .option("kafka.bootstrap.servers", self.bootstrap)
                          .option("subscribe", str(self.source)).load()
                          .rdd.getNumPartitions())
        return self.tasks

    def ensure_source(self) -> None:
        """The topic the reads and streams read: written by kafka_fast (not timed) when no
        measured write made it (``--cases`` without the batch write)."""
        if self.source is None:
            self.write("kafka_fast", KAFKA_FAST_OPTIONS["batch write"])

    def stream(self, fmt: str, read_options: dict[str, str],
               write_options: dict[str, str], sink: str | None = None) -> dict[str, Any]:
        """readStream of ``fmt`` -> writeStream of ``sink`` (default ``fmt``) at a
        processingTime trigger until every row is through; the steady state from the query's
        progress, CPU over the same span. A ``null_stream`` sink writes nothing (nothing to
        compare); a ``null_stream`` source makes ``rows`` rows."""
        self.ensure_source()
        args = self.args
        sink = sink or fmt
        counted = sink in (NullStream.name(), "noop")
        target = "" if counted else self.fresh_topic()
        checkpoint = self.workdir / f"ckpt-{uuid.uuid4().hex[:8]}"
        if fmt == NullStream.name():
            # as many tasks as kafka_fast packs a read of every partition into
            read_options = {"rows": str(self.rows), "triggerRows": str(args.trigger_rows),
                            "partitions": str(self.kafka_fast_tasks())}
        else:
            read_options = {"kafka.bootstrap.servers": self.bootstrap, **read_options,
                            "subscribe": str(self.source), "startingOffsets": "earliest",
                            "maxOffsetsPerTrigger": str(args.trigger_rows)}
        stream = (self.spark.readStream.format(fmt).options(**read_options)
                  .load().select("key", "value"))
        # a bound for a stuck query: 5x the slowest rate seen on a loaded machine
        deadline = time.monotonic() + STREAM_BOUND_S + self.rows / STREAM_FLOOR_ROWS_PER_S
        with CpuMeter() as meter:
            began = time.monotonic()
            query = (stream.writeStream.format(sink)
                     .option("kafka.bootstrap.servers", self.bootstrap)
                     .options(**write_options).option("topic", target)
                     .option("checkpointLocation", str(checkpoint))
                     .trigger(processingTime=f"{args.trigger_ms} milliseconds").start())
            try:
                while True:
                    progress = query.recentProgress
                    if sum(p["numInputRows"] for p in progress) >= self.rows:
                        break
                    if query.exception() is not None:
                        raise RuntimeError(f"{fmt} query failed: {query.exception()}")
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{fmt} query did not read {self.rows} rows in time")
                    time.sleep(0.05)
                whole = time.monotonic() - began
            finally:
                query.stop()
        got = None
        if not counted:
            # a made-up source's rows are not the DataFrame's: their count is checked
            got = self.written(target, self.rows if fmt == NullStream.name() else None)
            self.drop(target)
        steady = steady_state(progress, args.skip_batches)
        span, cpu = meter.used_between(steady["start"], steady["end"])
        # CPU of the span scaled to the steady rows' share of it (the span can be wider by
        # up to one sampling interval at each end)
        scale = (steady["end"] - steady["start"]) / span if span > 0 else 1.0
        cpu = {k: None if v is None else v * scale for k, v in cpu.items()}
        return {"seconds": steady["rows"] / steady["rows_per_s"], "cpu": cpu, "print": got,
                "rows": steady["rows"], "query_seconds": whole,
                "batches": steady["batches"], "p50_ms": steady["p50_ms"],
                "p99_ms": steady["p99_ms"], "phases_ms": steady["phases_ms"],
                "all_cpu": meter.used}


def other_cpu(cpu: dict[str, float | None]) -> float:
    """CPU seconds of processes that are not the benchmark's in a job's ``cpu_diff``."""
    ours = sum(cpu.get(k) or 0.0 for k in PROCESS_GROUPS)
    return max(0.0, (cpu.get("machine") or 0.0) - ours)


def run_connectors(spark, broker, args, workdir: Path
                   ) -> tuple[list[dict], dict[str, dict[str, str]], list[dict], float]:
    """Every job with both connectors: one uncounted warm-up round of ``--warmup-rows``
    rows, the built-in connector's tuning (``--tune``), then ``--runs`` interleaved rounds.
    ``(result rows, the built-in's options by job, tuning rows, share of the CPUs other
    processes used during the measured jobs)``."""
    spark.dataSource.register(NullArrowSink)
    spark.dataSource.register(NullStream)
    spark.dataSource.register(NullArrowSource)
    chosen = {"batch write": {**COMMON_OPTIONS,
                              **list(BUILTIN_WRITE_CANDIDATES.values())[args.builtin_write]},
              "batch read": dict(list(BUILTIN_READ_CANDIDATES.values())[args.builtin_read])}
    if args.warmup_rows:
        print(f"warm-up with {args.warmup_rows:,} rows (not counted)", flush=True)
        jobs = Jobs(spark, broker, args, workdir, args.warmup_rows)
        try:
            one_round(jobs, builtin_options(chosen), 0)
        finally:
            jobs.close()
    tuning: list[dict] = []
    if args.tune and {"batch write", "batch read"} <= set(args.cases):
        rows = min(args.tune_rows, args.rows)
        print(f"tuning the built-in connector with {rows:,} rows", flush=True)
        jobs = Jobs(spark, broker, args, workdir, rows)
        try:
            for label, options in BUILTIN_WRITE_CANDIDATES.items():
                got = jobs.write("kafka", {**COMMON_OPTIONS, **options})
                tuning.append({"case": "batch write", "label": label, "options": options,
                               "rows_per_s": round(rows / got["seconds"])})
                print(f"  batch write {label:60s} {rows / got['seconds']:12,.0f} rows/s",
                      flush=True)
            for label, options in BUILTIN_READ_CANDIDATES.items():
                got = jobs.read("kafka", options)
                tuning.append({"case": "batch read", "label": label, "options": options,
                               "rows_per_s": round(rows / got["seconds"])})
                print(f"  batch read  {label:60s} {rows / got['seconds']:12,.0f} rows/s",
                      flush=True)
        finally:
            jobs.close()
        for case in ("batch write", "batch read"):
            best = max((t for t in tuning if t["case"] == case), key=lambda t: t["rows_per_s"])
            chosen[case] = ({**COMMON_OPTIONS, **best["options"]} if case == "batch write"
                            else dict(best["options"]))
            print(f"built-in {case}: {best['label']}", flush=True)
    options = builtin_options(chosen)
    jobs = Jobs(spark, broker, args, workdir, args.rows)
    samples: dict[tuple[str, str], list[dict]] = {}
    try:
        for i in range(args.runs):  # interleaved rounds, the connectors' order alternating
            for key, got in one_round(jobs, options, i).items():
                samples.setdefault(key, []).append(got)
    finally:
        jobs.close()
    measured = [s for runs in samples.values() for s in runs]
    busy = sum(s["seconds"] for s in measured) * (os.cpu_count() or 1)
    other_share = sum(other_cpu(s["cpu"]) for s in measured) / busy if busy else 0.0
    return summarise(samples, args.rows), options["built-in"], tuning, other_share


def builtin_options(chosen: dict[str, dict[str, str]]) -> dict[str, dict[str, dict[str, str]]]:
    """Each connector's options by job; the built-in's streaming query takes its best read
    options (without minPartitions, which a stream plans alike) and write options."""
    read = {k: v for k, v in chosen["batch read"].items() if k != "minPartitions"}
    return {"built-in": {"batch write": chosen["batch write"], "batch read": chosen["batch read"],
                         "streaming read": read, "streaming": chosen["batch write"]},
            "kafka_fast": {"batch write": KAFKA_FAST_OPTIONS["batch write"],
                           "batch read": KAFKA_FAST_OPTIONS["batch read"],
                           "streaming read": KAFKA_FAST_OPTIONS["batch read"],
                           "streaming": KAFKA_FAST_OPTIONS["streaming"]}}


def one_round(jobs: Jobs, options: dict, index: int) -> dict[tuple[str, str], dict]:
    """One round of every job; ``{(case, connector): sample}``."""
    order = list(CONNECTORS.items())
    if index % 2:
        order.reverse()
    out: dict[tuple[str, str], dict] = {}

    def show(case: str, who: str, got: dict) -> None:
        out[(case, who)] = got
        extra = (f"  p50 {got['p50_ms']:.0f} ms p99 {got['p99_ms']:.0f} ms, "
                 f"{got['batches']} batches, whole query {got['query_seconds']:.1f} s"
                 if "p50_ms" in got else "")
        rows = got.get("rows", jobs.rows)
        print(f"{case:12s} {who:37s} {rows / got['seconds']:12,.0f} rows/s "
              f"{got['seconds']:7.2f} s{extra}", flush=True)

    cases = jobs.args.cases
    if "batch write" in cases:
        for who, fmt in order:
            show("batch write", who, jobs.write(fmt, options[who]["batch write"]))
        for who, fmt in SPARK_ALONE.items():
            show("batch write", who, jobs.write_alone(fmt))
    if "batch read" in cases:
        for who, fmt in order:
            show("batch read", who, jobs.read(fmt, options[who]["batch read"]))
        for who, fmt in READ_ALONE.items():
            show("batch read", who, jobs.read_alone(fmt))
    if "streaming" in cases:
        for who, fmt in order:
            show("streaming", who, jobs.stream(fmt, options[who]["streaming read"],
                                               options[who]["streaming"]))
            print_phases(out[("streaming", who)])
        for who, (source, sink) in STREAM_ALONE.items():
            read = options["built-in"]["streaming read"] if source == "kafka" else {}
            show("streaming", who, jobs.stream(source, read, {}, sink=sink))
            print_phases(out[("streaming", who)])
    return out


def print_phases(got: dict) -> None:
    """A streaming job's median micro-batch phases (ms)."""
    phases = got.get("phases_ms") or {}
    print("             phases (median ms): " + ", ".join(f"{k} {v:.0f}"
                                                          for k, v in phases.items()),
          flush=True)


def summarise(samples: dict[tuple[str, str], list[dict]], n: int) -> list[dict]:
    """Result rows: the median of each job's runs, and its ratio to the built-in's."""
    results = []
    for case in [c for c in CASES if (c, "built-in") in samples]:
        prints = {who: {s["print"] for s in samples[(case, who)]} for who in CONNECTORS}
        same = prints["built-in"] == prints["kafka_fast"]
        assert same, (case, prints)

        def rate(s: dict) -> float:
            return s.get("rows", n) / s["seconds"]

        base = statistics.median(rate(s) for s in samples[(case, "built-in")])
        alone = {"batch write": SPARK_ALONE, "batch read": READ_ALONE,
                 "streaming": STREAM_ALONE}.get(case, {})
        for who in [*CONNECTORS, *alone]:
            runs = samples[(case, who)]
            rows_per_s = statistics.median(rate(s) for s in runs)
            rows = runs[0].get("rows", n)
            row: dict[str, Any] = {
                "case": case, "connector": who, "rows": rows,
                "seconds": round(statistics.median(s["seconds"] for s in runs), 3),
                "rows_per_s": round(rows_per_s), "vs_builtin": round(rows_per_s / base, 2),
                "same_rows_as_builtin": same if who in CONNECTORS else None,
                "samples_s": [round(s["seconds"], 3) for s in runs],
                "samples_rows_per_s": [round(rate(s)) for s in runs],
            }
            cpu = median_cpu([s["cpu"] for s in runs])
            if cpu is not None:
                row["cpu_s"] = cpu
                row["cpu_s_per_million"] = per_million(
                    [s["cpu"] for s in runs], [s.get("rows", n) for s in runs])
            if case == "streaming":
                row["p50_ms"] = round(statistics.median(s["p50_ms"] for s in runs), 1)
                row["p99_ms"] = round(statistics.median(s["p99_ms"] for s in runs), 1)
                row["batches"] = runs[0]["batches"]
                row["query_seconds"] = round(statistics.median(s["query_seconds"]
                                                               for s in runs), 2)
                row["samples_p99_ms"] = [round(s["p99_ms"], 1) for s in runs]
                row["phases_ms"] = {k: round(statistics.median(s["phases_ms"][k]
                                                               for s in runs), 1)
                                    for k in PHASES}
            results.append(row)
    return results


def per_million(cpus: list[dict[str, float | None]], rows: list[int]) -> dict[str, float | None]:
    """CPU seconds per million rows, median of the runs: ``spark_and_client`` (Spark's JVM
    and its Python workers: Spark and either connector's client, which runs in one or the
    other), ``broker`` and ``machine``; None where a run lacks the figure."""
    out: dict[str, float | None] = {}
    for key in ("spark_and_client", "broker", "machine"):
        values: list[float] = []
        for cpu, n in zip(cpus, rows, strict=True):
            if key == "spark_and_client":
                jvm, py = cpu.get("spark_jvm"), cpu.get("python_workers")
                value = None if jvm is None or py is None else jvm + py
            else:
                value = cpu.get(key)
            if value is None:
                values = []
                break
            values.append(value / n * 1e6)
        out[key] = round(statistics.median(values), 3) if values else None
    return out


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
