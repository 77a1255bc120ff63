"""The ``kafka_fast`` Spark data source (batch and streaming, read and write) on local[2]
Spark and the real Apache Kafka broker, checked record by record."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from harness import create_topic, unique_topic
from harness.jvm_start import spark_submit_args
from pyspark.sql import functions as F

import kafka_fast.spark as kspark
from kafka_fast.spark.source import driver_cores, parse_source_options

from .builtin_connector import read_rows
from .kafka_records import read_committed

pytestmark = pytest.mark.timeout(300)

BASE_TS = 1_700_000_000_000


@pytest.fixture(scope="module", autouse=True)
def registered(spark):
    kspark.register(spark)


def produce_exact(kafka, topic: str, items, headers: bool = False) -> list[tuple]:
    """Produce ``(partition, key, value, timestamp_ms)`` items with confluent-kafka; the acked
    records as ``(partition, offset, key, value, timestamp_ms)``, sorted."""
    producer = Producer(kafka.client_config({"linger.ms": 5}))
    acked, errors = [], []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset(), msg.key(), msg.value(),
                          msg.timestamp()[1]))

    for partition, key, value, ts in items:
        producer.produce(topic, value=value, key=key, partition=partition, timestamp=ts,
                         headers=[("n", value)] if headers else None, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(30) == 0 and not errors, errors
    return sorted(acked)


def source(spark, kafka, **options):
    reader = spark.read.format("kafka_fast").option(
        "kafka.bootstrap.servers", kafka.bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def exact_rows(df) -> list[tuple]:
    return sorted((r.partition, r.offset, r.key, r.value,
                   int(r.timestamp.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
                   if r.timestamp.tzinfo is None else int(r.timestamp.timestamp() * 1000))
                  for r in df.collect())


@pytest.fixture(scope="module")
def three_partitions(kafka):
    topic = unique_topic("ds-read")
    create_topic(kafka, topic, 3)
    items = [(i % 3, b"k%04d" % i, b"v%04d" % i, BASE_TS + i) for i in range(300)]
    return topic, produce_exact(kafka, topic, items, headers=True)


# ---------------------------------------------------------------------------------------------
# batch read


def test_batch_read_of_three_partitions_is_what_was_produced(spark, kafka, three_partitions):
    topic, log = three_partitions
    df = source(spark, kafka, subscribe=topic)
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>")
    assert len(log) == 300
    assert exact_rows(df) == log
    assert {(r.topic, r.timestampType) for r in df.select("topic", "timestampType").collect()
            } == {(topic, 0)}


def test_batch_read_options(spark, kafka, three_partitions):
    topic, log = three_partitions
    start = json.dumps({topic: {"0": 10, "1": -2, "2": 95}})
    end = json.dumps({topic: {"0": 20, "1": 5, "2": -1}})
    want = [r for r in log if (r[0] == 0 and 10 <= r[1] < 20) or (r[0] == 1 and r[1] < 5)
            or (r[0] == 2 and r[1] >= 95)]
    assert len(want) == 10 + 5 + 5
    df = source(spark, kafka, subscribe=topic, startingOffsets=start, endingOffsets=end,
                minPartitions=5)
    assert exact_rows(df) == want
    assert df.rdd.getNumPartitions() == 5
    assigned = source(spark, kafka, assign=json.dumps({topic: [1]}), includeHeaders="true")
    rows = assigned.collect()
    assert sorted((r.partition, r.offset, r.key) for r in rows) == [
        (p, o, k) for p, o, k, _, _ in log if p == 1]
    assert all([(h.key, h.value) for h in r.headers] == [("n", r.value)] for r in rows)
    by_time = source(spark, kafka, subscribePattern=topic.replace("-", "."),
                     startingTimestamp=str(BASE_TS + 290))
    assert exact_rows(by_time) == [r for r in log if r[4] >= BASE_TS + 290]


def test_kafka_partitions_share_tasks_unless_pack_partitions_is_false(spark, kafka,
                                                                     three_partitions):
    topic, log = three_partitions

    def tasks(**options) -> list[list[tuple[int, int]]]:
        """Each task's ``(partition, offset)`` rows, sorted: a task reads its ranges together,
        so the partitions' records interleave, each partition's in offset order."""
        df = source(spark, kafka, subscribe=topic, **options)
        got = [[(r.partition, r.offset) for r in rows] for rows in df.rdd.glom().collect()]
        for rows in got:
            for p in {q for q, _ in rows}:
                offsets = [o for q, o in rows if q == p]
                assert offsets == sorted(offsets), (p, offsets)
        return [sorted(rows) for rows in got]

    def run(p: int, start: int = 0, end: int = 100) -> list[tuple[int, int]]:
        return [(q, o) for q, o, *_ in log if q == p and start <= o < end]

    # 3 x 100 records in at most 2 tasks: Kafka partitions 0 and 2 share the first, whole
    assert tasks(packPartitions="2") == [run(0) + run(2), run(1)]
    # one task reads three ranges that start and end inside the logs: exactly their records
    start = json.dumps({topic: {"0": 10, "1": 0, "2": 97}})
    end = json.dumps({topic: {"0": 11, "1": 60, "2": 99}})
    assert tasks(packPartitions="1", startingOffsets=start, endingOffsets=end) == [
        run(0, 10, 11) + run(1, 0, 60) + run(2, 97, 99)]
    assert tasks(packPartitions="false") == [run(0), run(1), run(2)]
    assert tasks(packPartitions="1", minPartitions="3") == [run(0), run(1), run(2)]
    assert tasks(packPartitions="1") == [run(0) + run(1) + run(2)]
    # packPartitions=true: the session's parallelism, which register(spark) passed on to
    # Spark's planning process (the driver's cores only when it cannot be known)
    assert len(tasks()) == min(3, spark.sparkContext.defaultParallelism)
    default = parse_source_options({"kafka.bootstrap.servers": "b", "subscribe": topic},
                                   streaming=False)
    assert default.max_tasks == driver_cores()
    wider = parse_source_options({"kafka.bootstrap.servers": "b", "subscribe": topic},
                                 streaming=False, parallelism=7)
    assert wider.max_tasks == 7


@pytest.mark.parametrize(("options", "named"), [
    ({"subscribe": "t", "packPartitions": "0"}, "packPartitions"),
    ({"subscribe": "t", "startingOffsets": "sometimes"}, "startingOffsets"),
    ({"subscribe": "t", "startingOffsets": "{\"t\": [1]}"}, "startingOffsets"),
    ({"subscribe": "t", "minPartitions": "0"}, "minPartitions"),
    ({"subscribe": "t", "failOnDataLoss": "maybe"}, "failOnDataLoss"),
    ({}, "subscribe"),
])
def test_bad_read_options_name_the_option(spark, kafka, options, named):
    with pytest.raises(Exception, match=named):
        source(spark, kafka, **options).collect()


def test_missing_bootstrap_servers_is_named(spark):
    with pytest.raises(Exception, match="kafka.bootstrap.servers"):
        spark.read.format("kafka_fast").option("subscribe", "t").load().collect()
    df = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception, match="kafka.bootstrap.servers"):
        df.write.format("kafka_fast").option("topic", "t").mode("append").save()


# ---------------------------------------------------------------------------------------------
# streaming read


def run_available_now(spark, kafka, topic: str, checkpoint: str, **options) -> list:
    """One availableNow run of a kafka_fast stream into foreachBatch; the micro-batches as
    ``(batch_id, rows)``."""
    batches = []
    reader = (spark.readStream.format("kafka_fast")
              .option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    query = (reader.load().writeStream
             .foreachBatch(lambda df, batch_id: batches.append((batch_id, df.collect())))
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination(240)
    assert query.exception() is None, query.exception()
    return batches


def test_stream_restarted_from_its_checkpoint_reads_every_record_once(spark, kafka, tmp_path):
    topic = unique_topic("ds-stream")
    create_topic(kafka, topic, 3)
    first = produce_exact(kafka, topic, [(i % 3, b"k%d" % i, b"a%04d" % i, BASE_TS + i)
                                         for i in range(150)])
    checkpoint = str(tmp_path / "checkpoint")
    run1 = run_available_now(spark, kafka, topic, checkpoint, startingOffsets="earliest",
                             maxOffsetsPerTrigger="60")
    assert [len(rows) for _, rows in run1 if rows] == [60, 60, 30]  # maxOffsetsPerTrigger
    second = produce_exact(kafka, topic, [(i % 3, b"k%d" % i, b"b%04d" % i, BASE_TS + i)
                                          for i in range(90)])
    run2 = run_available_now(spark, kafka, topic, checkpoint, startingOffsets="earliest",
                             maxOffsetsPerTrigger="60")
    assert min(b for b, _ in run2) > max(b for b, _ in run1)  # resumed, not restarted
    seen = [(r.partition, r.offset, r.key, r.value,
             int(r.timestamp.replace(tzinfo=dt.timezone.utc).timestamp() * 1000))
            for _, rows in run1 + run2 for r in rows]
    assert len(seen) == len(set(seen)) == 240  # every record exactly once
    assert sorted(seen) == sorted(first + second)
    run3 = run_available_now(spark, kafka, topic, checkpoint)
    assert all(not rows for _, rows in run3)  # nothing new: nothing read again


def test_stream_starting_at_latest_reads_only_new_records(spark, kafka, tmp_path):
    topic = unique_topic("ds-latest")
    create_topic(kafka, topic, 2)
    produce_exact(kafka, topic, [(i % 2, None, b"old%d" % i, BASE_TS) for i in range(20)])
    checkpoint = str(tmp_path / "checkpoint")
    assert all(not rows for _, rows in run_available_now(spark, kafka, topic, checkpoint))
    new = produce_exact(kafka, topic, [(i % 2, None, b"new%d" % i, BASE_TS) for i in range(10)])
    rows = [r for _, rs in run_available_now(spark, kafka, topic, checkpoint) for r in rs]
    assert sorted((r.partition, r.offset, r.value) for r in rows) == [
        (p, o, v) for p, o, _, v, _ in new]


def test_stream_resumed_past_deleted_records_fails_or_skips_them(spark, kafka, tmp_path):
    """A micro-batch whose start was deleted: the log start of the trigger's own look-up
    fails the query (failOnDataLoss, default) or starts the batch there."""
    import shutil

    from confluent_kafka import TopicPartition as CTP
    from confluent_kafka.admin import AdminClient

    topic = unique_topic("ds-loss")
    create_topic(kafka, topic, 1)
    produce_exact(kafka, topic, [(0, None, b"a%d" % i, BASE_TS) for i in range(10)])
    checkpoint = tmp_path / "checkpoint"
    run1 = run_available_now(spark, kafka, topic, str(checkpoint), startingOffsets="earliest")
    assert [r.offset for _, rows in run1 for r in rows] == list(range(10))
    produce_exact(kafka, topic, [(0, None, b"b%d" % i, BASE_TS) for i in range(10)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for fut in admin.delete_records([CTP(topic, 0, 15)]).values():
        fut.result(30)
    shutil.copytree(checkpoint, tmp_path / "copy")
    with pytest.raises(Exception, match=r"offsets \[10, 15\) were deleted"):
        run_available_now(spark, kafka, topic, str(tmp_path / "copy"))
    run2 = run_available_now(spark, kafka, topic, str(checkpoint), failOnDataLoss="false")
    assert [(r.offset, r.value) for _, rows in run2 for r in rows] == [
        (o, b"b%d" % (o - 10)) for o in range(15, 20)]


# ---------------------------------------------------------------------------------------------
# writes


def test_batch_write_with_sink_columns(spark, kafka):
    topic, other = unique_topic("ds-write"), unique_topic("ds-write-b")
    create_topic(kafka, topic, 3)
    create_topic(kafka, other, 1)
    n = 3000
    df = spark.range(n, numPartitions=3).select(
        F.format_string("k%d", F.col("id") % 17).alias("key"),  # string: UTF-8
        F.format_string("v%d", F.col("id")).cast("binary").alias("value"),
        F.when(F.col("id") % 10 == 0, F.lit(other)).otherwise(F.lit(topic)).alias("topic"),
        F.when(F.col("id") % 10 == 0, F.lit(0)).otherwise((F.col("id") % 3).cast("int"))
         .alias("partition"),
        F.array(F.struct(F.lit("id").alias("key"),
                         F.col("id").cast("string").cast("binary").alias("value"))
                ).alias("headers"),
        F.lit("ignored").alias("extra"),
    )
    df.write.format("kafka_fast").option("kafka.bootstrap.servers", kafka.bootstrap) \
        .mode("append").save()
    got = source(spark, kafka, subscribe=f"{topic},{other}", includeHeaders="true").collect()
    assert len(got) == n
    seen = set()
    for r in got:
        i = int(r.value[1:])
        assert r.key == b"k%d" % (i % 17)
        assert (r.topic, r.partition) == ((other, 0) if i % 10 == 0 else (topic, i % 3))
        assert [(h.key, h.value) for h in r.headers] == [("id", str(i).encode())]
        seen.add(i)
    assert seen == set(range(n))


def test_bad_sink_columns_are_named(spark, kafka):
    df = spark.createDataFrame([(1,)], "value int")
    writer = df.write.format("kafka_fast").option("kafka.bootstrap.servers", kafka.bootstrap)
    with pytest.raises(Exception, match="column 'value' must be binary or string"):
        writer.option("topic", "t").mode("append").save()
    ok = spark.createDataFrame([(b"v",)], "value binary").write.format("kafka_fast") \
        .option("kafka.bootstrap.servers", kafka.bootstrap).mode("append")
    with pytest.raises(Exception, match="'topic' option"):
        ok.save()
    with pytest.raises(Exception, match="exactlyOnce"):
        ok.option("topic", "t").option("exactlyOnce", "true").save()


def test_exactly_once_stream_write_survives_a_failed_task(spark, kafka, tmp_path):
    src, out = unique_topic("ds-eos-in"), unique_topic("ds-eos-out")
    create_topic(kafka, src, 2)
    create_topic(kafka, out, 2)
    n = 400
    pad = b"." * 2000  # rows reach Python writers through a 64 KiB buffer: fill it
    produce_exact(kafka, src, [(i % 2, b"k%d" % i, b"v%04d" % i + pad, BASE_TS + i)
                               for i in range(n)])
    flag = tmp_path / "fail-once"
    flag.write_text("armed")
    prefix = f"eos-{uuid.uuid4().hex[:6]}-{out}"  # one per query, kept across its restarts

    @F.udf("binary")
    def fail_once(value):
        # the first run fails the task holding v0301 (Kafka partition 1, 151st record) after
        # the writer has sent the rows before it in its open transaction
        if value.startswith(b"v0301") and flag.exists():
            flag.unlink()
            time.sleep(3)  # the writer sends what it has in the meantime
            raise RuntimeError("injected task failure")
        return value

    def run() -> Exception | None:
        stream = (spark.readStream.format("kafka_fast")
                  .option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", src)
                  .option("startingOffsets", "earliest").load())
        query = (stream.select("key", fail_once("value").alias("value")).writeStream
                 .format("kafka_fast").option("kafka.bootstrap.servers", kafka.bootstrap)
                 .option("topic", out).option("exactlyOnce", "true")
                 .option("transactionalIdPrefix", prefix)
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        try:
            query.awaitTermination(240)
        except Exception as exc:  # the injected failure fails the query
            return exc
        return query.exception()

    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "20")
    try:
        failure = run()
        assert failure is not None and "injected task failure" in str(failure)
        assert not flag.exists()
        assert run() is None  # the restart re-runs the failed micro-batch
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)
    committed = read_committed(kafka, out, 2)
    assert Counter(v for *_, v in committed) == Counter(b"v%04d" % i + pad for i in range(n))
    everything = read_committed(kafka, out, 2, "read_uncommitted")
    # the failed attempt's records are in the log, aborted: read_committed skips them
    assert len(everything) > len(committed), (len(everything), len(committed))


# ---------------------------------------------------------------------------------------------
# Spark's built-in Kafka connector reads the same rows


def test_builtin_connector_reads_the_same_rows(both, kafka, three_partitions):
    topic, log = three_partitions
    builtin = read_rows(both, "kafka", kafka.bootstrap, topic)
    assert len(builtin) == len(log) == 300
    assert read_rows(both, "kafka_fast", kafka.bootstrap, topic) == builtin
    assert [(r[1], r[2], bytes.fromhex(r[3]), bytes.fromhex(r[4])) for r in builtin] == [
        (p, o, k, v) for p, o, k, v, _ in log]


# ---------------------------------------------------------------------------------------------
# the streaming example


def test_example_streaming_pipeline(spark, kafka, tmp_path):
    import runpy

    example = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples"
                                 / "spark_streaming.py"))
    source_topic, target = unique_topic("orders-s"), unique_topic("large-orders-s")
    create_topic(kafka, source_topic, 3)
    create_topic(kafka, target, 2)
    customers = ["ada", "bob", "cy", "dee", "eve"]
    orders = [{"customer": customers[i % 5], "amount": (i * 37) % 250 + 0.25, "items": i % 4}
              for i in range(300)]

    def produce_orders(part):
        produce_exact(kafka, source_topic, [(i % 3, None, json.dumps(o).encode(), BASE_TS)
                                            for i, o in part])

    def run():
        query = example["start"](spark, kafka.bootstrap, source_topic, target,
                                 str(tmp_path / "ckpt"), 100.0, available_now=True)
        query.awaitTermination(240)
        assert query.exception() is None, query.exception()

    produce_orders(list(enumerate(orders))[:200])
    run()
    produce_orders(list(enumerate(orders))[200:])
    run()
    want = Counter(
        (o["customer"].upper().encode(),
         json.dumps({"customer": o["customer"].upper(), "cents": round(o["amount"] * 100),
                     "items": o["items"]}, separators=(",", ":")).encode())
        for o in orders if o["amount"] >= 100)
    got = read_committed(kafka, target, 2)
    assert Counter((k, v) for _, _, k, v in got) == want
    assert sum(want.values()) > 100


QUIET_READS = """
import os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
import kafka_fast.spark as ks
bootstrap, topic = sys.argv[1:]
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").config("spark.log.level", "ERROR")
         .getOrCreate())
ks.register(spark)
counts = []
for options in ({"subscribe": topic}, {"subscribePattern": topic[:7]},
                {"subscribe": topic, "startingTimestamp": "0"},
                {"subscribe": topic, "startingTimestamp": "9999999999999",
                 "startingOffsetsByTimestampStrategy": "latest"},
                {"subscribe": topic, "minPartitions": "5"}):
    df = (spark.read.format("kafka_fast").option("kafka.bootstrap.servers", bootstrap)
          .options(**options).load())
    counts.append(len(df.collect()))
spark.stop()
print(counts)
"""


def test_reads_print_nothing_to_stderr(kafka, tmp_path):
    """Planning and reading (in Spark's own Python processes, whose log records go to stderr
    rather than to pytest) print no traceback, e.g. none from a closed client's I/O thread."""
    topic = unique_topic("ds-quiet")
    create_topic(kafka, topic, 3)
    produce_exact(kafka, topic, [(i % 3, None, b"q%d" % i, BASE_TS + i) for i in range(90)])
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": spark_submit_args()}
    done = subprocess.run([sys.executable, "-c", QUIET_READS, kafka.bootstrap, topic],
                          capture_output=True, text=True, timeout=280, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[90, 90, 90, 0, 90]"
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert "client is closed" not in done.stderr, done.stderr[-4000:]
