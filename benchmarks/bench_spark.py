"""Spark local[2] writing and reading Kafka: kafka_fast.spark against confluent-kafka.

Every job runs on the same cached DataFrame (``--rows`` rows: 10-byte keys, 100-byte values)
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
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
import warnings
from pathlib import Path

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from harness import create_topic, start_tansu  # noqa: E402
from harness.brokers import Broker  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--bootstrap", help="use this cluster instead of a private Tansu")
    args = parser.parse_args()

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
