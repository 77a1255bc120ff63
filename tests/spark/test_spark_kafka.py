"""Spark (local[2]) writing to and reading from a real broker, checked record by record
against what confluent-kafka reads and writes."""

from __future__ import annotations

import json
import os
import re
import runpy
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_INVALID, Consumer, TopicPartition
from harness import create_topic, free_port, unique_topic
from harness.reference_client import produce
from pyspark.sql import Row
from pyspark.sql import functions as F

from kafka_fast.spark import (
    DataLossError,
    clients,
    foreach_partition_writer,
    map_partitions_producer,
    offset_ranges,
    read_kafka,
    write_kafka,
)
from kafka_fast.spark.writer import producer_for

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (``org.apache.kafka.common.utils.Utils.murmur2``), as a signed int."""
    m = 0x5BD1E995
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    whole = len(data) // 4
    for i in range(whole):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[4 * whole :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """The Java client's (and Spark's Kafka sink's) partition for a non-null key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def test_murmur2_matches_kafkas_published_vectors():
    # Kafka's UtilsTest.testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def confluent_read(kafka, topic: str, partitions: int, count: int, timeout: float = 60.0):
    """Every record of ``topic`` read with confluent-kafka: (partition, offset, key, value,
    headers tuple), sorted."""
    consumer = Consumer(kafka.client_config({
        "group.id": f"check-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "fetch.wait.max.ms": 50}))
    try:
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                assert msg.error() is None, msg.error()
                out.append((msg.partition(), msg.offset(), msg.key(), msg.value(),
                            tuple(msg.headers() or ())))
        assert len(out) == count, f"confluent-kafka read {len(out)} of {count} records"
        return sorted(out)
    finally:
        consumer.close()


def rows_of(df):
    """(partition, offset, key, value, headers tuple) of a read_kafka DataFrame, sorted."""
    has_headers = "headers" in df.columns
    out = []
    for r in df.collect():
        headers = tuple((h.key, h.value) for h in r.headers or ()) if has_headers else ()
        out.append((r.partition, r.offset, r.key, r.value, headers))
    return sorted(out)


# ---------------------------------------------------------------------------------------------
# writing


def test_100k_rows_with_keys_and_headers_round_trip(spark, kafka):
    topic, partitions, n = unique_topic("spark-w"), 4, 100_000
    create_topic(kafka, topic, partitions)
    df = spark.range(n, numPartitions=4).select(
        F.col("id"),
        F.format_string("key-%d", F.col("id") % 997).cast("binary").alias("key"),
        F.format_string("value-%d", F.col("id")).cast("binary").alias("value"),
        F.array(
            F.struct(F.lit("id").alias("key"), F.col("id").cast("string").cast("binary").alias("value")),
            F.struct(F.lit("src").alias("key"), F.lit("spark").cast("binary").alias("value")),
        ).alias("headers"),
    )
    df.foreachPartition(foreach_partition_writer(
        kafka.client_config(), topic, key_col="key", headers_col="headers"))

    expected = Counter(
        (b"key-%d" % (i % 997), b"value-%d" % i, (("id", str(i).encode()), ("src", b"spark")))
        for i in range(n))
    ours = rows_of(read_kafka(spark, kafka.client_config(), topic, include_headers=True))
    theirs = confluent_read(kafka, topic, partitions, n)
    assert Counter((k, v, h) for _, _, k, v, h in ours) == expected
    assert ours == theirs  # same records at the same partitions and offsets

    ids_by_key_and_task = defaultdict(list)
    for partition, _offset, key, value, _ in theirs:  # sorted by (partition, offset)
        assert partition == java_partition(key, partitions)
        i = int(value.split(b"-")[1])
        ids_by_key_and_task[(key, i // (n // 4))].append(i)
    # records of one key written by one Spark task keep their order
    assert all(ids == sorted(ids) for ids in ids_by_key_and_task.values())


def test_write_kafka_arrow_path_with_partition_and_timestamp_columns(spark, kafka):
    topic, n = unique_topic("spark-arrow"), 3000
    create_topic(kafka, topic, 3)
    df = spark.range(n, numPartitions=3).select(
        F.format_string("k%d", F.col("id") % 50).alias("key"),  # string: UTF-8 encoded
        F.when(F.col("id") % 100 == 7, F.lit(None))
         .otherwise(F.format_string("v%d", F.col("id"))).alias("value"),
        (F.col("id") % 3).cast("int").alias("part"),
        (F.lit(1_700_000_000_000) + F.col("id")).alias("ts"),
        F.create_map(F.lit("n"), F.col("id").cast("string")).alias("hdrs"),
    )
    sent = write_kafka(df, kafka.client_config(), topic, key_col="key", partition_col="part",
                       timestamp_col="ts", headers_col="hdrs")
    assert sent == n
    got = read_kafka(spark, kafka.client_config(), topic, include_headers=True).collect()
    assert len(got) == n
    seen = set()
    for r in got:
        i = int(r.headers[0].value)
        assert r.key == b"k%d" % (i % 50)
        assert r.value == (None if i % 100 == 7 else b"v%d" % i)
        assert r.partition == i % 3
        assert int(r.timestamp.timestamp() * 1000) == 1_700_000_000_000 + i
        assert r.timestampType == 0
        assert [(h.key, h.value) for h in r.headers] == [("n", str(i).encode())]
        seen.add(i)
    assert seen == set(range(n))
    by_partition_and_task = defaultdict(list)  # spark.range gives each task a block of ids
    for r in sorted(got, key=lambda r: (r.partition, r.offset)):
        i = int(r.headers[0].value)
        by_partition_and_task[(r.partition, i // (n // 3))].append(i)
    assert len(by_partition_and_task) == 9
    assert all(ids == sorted(ids) for ids in by_partition_and_task.values())


def test_row_by_row_json_values_and_map_partitions_counts(spark, kafka):
    topic = unique_topic("spark-rows")
    create_topic(kafka, topic, 2)
    rows = [{"id": i, "doc": {"n": i, "tags": ["a", str(i)]}, "p": i % 2} for i in range(60)]
    rdd = spark.sparkContext.parallelize(rows, 3)
    rdd.foreachPartition(foreach_partition_writer(
        kafka.client_config(), topic, value_col="doc", partition_col="p", use_batch=False,
        value_format="json"))
    counts = rdd.mapPartitions(map_partitions_producer(
        kafka.client_config(), topic, value_col="doc", partition_col="p",
        value_format="json")).collect()
    assert counts == [(0, 20, 0), (1, 20, 0), (2, 20, 0)]
    got = confluent_read(kafka, topic, 2, 120)
    docs = Counter((p, json.loads(v)["n"]) for p, _, _, v, _ in got)
    assert docs == Counter({(i % 2, i): 2 for i in range(60)})
    assert {v for _, _, _, v, _ in got} == {
        json.dumps({"n": i, "tags": ["a", str(i)]}, separators=(",", ":")).encode()
        for i in range(60)}


def test_one_cached_producer_per_python_worker(spark, kafka):
    topic = unique_topic("spark-cache")
    create_topic(kafka, topic, 1)
    conf = kafka.client_config({"client.id": f"cache-{uuid.uuid4().hex[:6]}"})
    counter = map_partitions_producer(conf, topic)

    def run(rows):
        for _, sent, failed in counter(rows):
            yield (os.getpid(), id(producer_for(counter.conf)), sent, failed)

    data = spark.sparkContext.parallelize([Row(value=b"x%d" % i) for i in range(80)], 8)
    results = data.mapPartitions(run).collect()
    assert [(sent, failed) for *_, sent, failed in results] == [(10, 0)] * 8
    producers_by_pid = defaultdict(set)
    for pid, producer_id, _, _ in results:
        producers_by_pid[pid].add(producer_id)
    assert len(producers_by_pid) < 8  # workers were reused across tasks
    assert all(len(ids) == 1 for ids in producers_by_pid.values())
    assert len(confluent_read(kafka, topic, 1, 80)) == 80
    assert clients.cached_count() == 0  # the driver itself made no client


def test_unreachable_broker_fails_the_job_with_the_delivery_error(spark):
    conf = {"bootstrap.servers": f"127.0.0.1:{free_port()}", "message.timeout.ms": 1500}
    # produce_batch waits for the topic's metadata up to request.timeout.ms before it can
    # partition: keep that short too, so every path ends in a timeout within seconds
    batch_conf = {**conf, "request.timeout.ms": 1500}
    rows = spark.sparkContext.parallelize([(b"v%d" % i,) for i in range(10)], 2)
    df = spark.createDataFrame(rows, "value binary")
    jobs = [
        ("_MSG_TIMED_OUT", lambda: df.foreachPartition(
            foreach_partition_writer(conf, "nowhere", use_batch=False))),
        ("_MSG_TIMED_OUT|_TIMED_OUT", lambda: df.foreachPartition(
            foreach_partition_writer(batch_conf, "nowhere"))),
        ("_MSG_TIMED_OUT|_TIMED_OUT", lambda: write_kafka(df, batch_conf, "nowhere")),
    ]
    for codes, job in jobs:
        start = time.monotonic()
        with pytest.raises(Exception) as info:
            job()
        elapsed = time.monotonic() - start
        text = str(info.value)
        assert "kafka_fast.spark.writer.DeliveryError" in text
        assert re.search(rf"5 of 5 records to topic 'nowhere' failed; first error ({codes}):",
                         text), text[-2000:]
        assert elapsed < 20, f"the failing job took {elapsed:.1f} s"


# ---------------------------------------------------------------------------------------------
# reading


@pytest.fixture(scope="module")
def known_topic(kafka):
    """3 partitions x 40 records written by confluent-kafka (several batches per partition)."""
    topic = unique_topic("spark-r")
    create_topic(kafka, topic, 3)
    items = [(i % 3, b"k%03d" % i, b"v%03d" % i) for i in range(120)]
    acked = []
    for start in range(0, 120, 30):  # separate flushes: more than one batch per partition
        acked += produce(kafka, topic, items[start : start + 30])
    log = sorted((r.partition, r.offset, r.key, r.value, ()) for r in acked)
    return topic, log


def test_read_to_latest_returns_every_record(spark, kafka, known_topic):
    topic, log = known_topic
    df = read_kafka(spark, kafka.client_config(), topic)
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
        "timestamp:timestamp,timestampType:int>")
    assert rows_of(df) == log
    assert {r.topic for r in df.select("topic").collect()} == {topic}


def test_read_explicit_offset_ranges(spark, kafka, known_topic):
    topic, log = known_topic
    start = {topic: {"0": 5, "1": -2, "2": 39}}
    end = {topic: {"0": 12, "1": 4, "2": -1}}
    want = [r for r in log if (r[0] == 0 and 5 <= r[1] < 12) or (r[0] == 1 and r[1] < 4)
            or (r[0] == 2 and r[1] >= 39)]
    assert len(want) == 7 + 4 + 1
    assert rows_of(read_kafka(spark, kafka.client_config(), topic, start, end)) == want
    assert rows_of(read_kafka(spark, kafka.client_config(), [topic], json.dumps(start),
                              json.dumps(end))) == want


def test_read_rejects_ranges_beyond_the_log_unless_told(spark, kafka, known_topic):
    topic, log = known_topic
    end = {topic: {"0": 41, "1": -1, "2": -1}}
    with pytest.raises(DataLossError, match=rf"{topic}-0: range \[0, 41\) is not within the log \[0, 40\)"):
        read_kafka(spark, kafka.client_config(), topic, "earliest", end)
    assert rows_of(read_kafka(spark, kafka.client_config(), topic, "earliest", end,
                              fail_on_data_loss=False)) == log
    with pytest.raises(ValueError, match="must name every partition"):
        read_kafka(spark, kafka.client_config(), topic, {topic: {"0": 0}})


def test_a_task_reads_its_ranges_together_each_exactly(kafka, known_topic):
    """Ranges of distinct partitions are read with one assignment; a partition seen again
    starts the next group; every range gives exactly its records, in offset order."""
    from kafka_fast.spark import clients
    from kafka_fast.spark.offsets import OffsetRange
    from kafka_fast.spark.reader import ROLE, RangeReader, together

    topic, log = known_topic
    ranges = [OffsetRange(topic, 0, 5, 12), OffsetRange(topic, 2, 39, 40),
              OffsetRange(topic, 1, 0, 40), OffsetRange(topic, 0, 30, 32)]
    assert [[r.partition for r in group] for group in together(ranges)] == [[0, 2, 1], [0]]
    reader = RangeReader(kafka.client_config())
    before = clients.cached_count()
    try:
        batches = list(reader.read_ranges(ranges))
        # a reader of another query (another made-up group id) reads with the same consumer
        again = RangeReader(kafka.client_config())
        assert again.conf["group.id"] != reader.conf["group.id"]
        assert sum(b.num_rows for b in again.read_ranges(ranges[2:3])) == 40
        assert clients.cached_count() == before + 1
    finally:
        clients.discard(ROLE, reader.cache_conf)
    got = [(p, o, k, v, ()) for b in batches for p, o, k, v in zip(
        *(b.column(c).to_pylist() for c in ("partition", "offset", "key", "value")),
        strict=True)]
    assert sorted(got) == [r for r in log if (r[0] == 0 and (5 <= r[1] < 12 or 30 <= r[1] < 32))
                           or r[0] == 1 or (r[0] == 2 and r[1] == 39)]
    for p in (0, 1, 2):
        offsets = [o for q, o, *_ in got if q == p]
        assert offsets == sorted(offsets)
    assert {b.column("topic")[0].as_py() for b in batches} == {topic}


def test_exact_log_ends_are_read_again_only_when_the_watermark_moved(kafka):
    """``known_ends`` stands for the read of the log's tail while the high watermark stays."""
    from kafka_fast.consumer import Consumer
    from kafka_fast.spark.offsets import log_bounds
    from kafka_fast.spark.reader import reader_config

    topic = unique_topic("spark-ends")
    create_topic(kafka, topic, 1)
    produce(kafka, topic, [(0, b"k", b"v%d" % i) for i in range(5)])
    consumer = Consumer({**reader_config(kafka.client_config()), "enable.partition.eof": True,
                         "fetch.wait.max.ms": 10})
    try:
        known: dict = {}
        assert log_bounds(consumer, [(topic, 0)], 30, exact_end=True,
                          known_ends=known) == {(topic, 0): (0, 5)}
        assert known == {(topic, 0): (5, 5)}
        # the same watermark: the end read before is taken as it is, without reading
        known[(topic, 0)] = (5, 7)
        assert log_bounds(consumer, [(topic, 0)], 30, exact_end=True,
                          known_ends=known) == {(topic, 0): (0, 7)}
        # the watermark moved: the tail is read again
        produce(kafka, topic, [(0, b"k", b"w")])
        assert log_bounds(consumer, [(topic, 0)], 30, exact_end=True,
                          known_ends=known) == {(topic, 0): (0, 6)}
        assert known == {(topic, 0): (6, 6)}
    finally:
        consumer.close()


def test_min_partitions_splits_ranges(spark, kafka, known_topic):
    topic, log = known_topic
    df = read_kafka(spark, kafka.client_config(), topic, min_partitions=7)
    assert df.rdd.getNumPartitions() == 7
    pieces = df.rdd.glom().collect()
    runs = [[(r.partition, r.offset) for r in piece] for piece in pieces]
    assert all(runs)
    for run in runs:  # each Spark partition is one contiguous run of one Kafka partition
        assert len({p for p, _ in run}) == 1
        offsets = [o for _, o in run]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    assert sorted(sum(runs, [])) == [(p, o) for p, o, *_ in log]
    assert sorted(len(run) for run in runs) == [13, 13, 14, 20, 20, 20, 20]
    assert len(offset_ranges(kafka.client_config(), topic)) == 3


def test_reading_twice_gives_the_same_records_and_commits_nothing(spark, kafka, known_topic):
    topic, log = known_topic
    group = f"spark-reader-{uuid.uuid4().hex[:8]}"
    conf = kafka.client_config({"group.id": group})
    first = rows_of(read_kafka(spark, conf, topic, min_partitions=4))
    second = rows_of(read_kafka(spark, conf, topic, min_partitions=4))
    assert first == second == log
    check = Consumer(kafka.client_config({"group.id": group, "enable.auto.commit": False}))
    try:
        committed = check.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
    finally:
        check.close()
    assert [tp.offset for tp in committed] == [OFFSET_INVALID] * 3


def test_read_an_empty_topic(spark, kafka):
    topic = unique_topic("spark-empty")
    create_topic(kafka, topic, 2)
    df = read_kafka(spark, kafka.client_config(), topic)
    assert df.collect() == []
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType"]


# ---------------------------------------------------------------------------------------------
# the example pipeline


def test_example_pipeline(spark, kafka):
    pipeline = runpy.run_path(str(EXAMPLES / "spark_pipeline.py"))
    source, target = unique_topic("orders"), unique_topic("large-orders")
    create_topic(kafka, source, 3)
    create_topic(kafka, target, 4)
    customers = ["ada", "bob", "cy", "dee", "eve"]
    orders = [{"customer": customers[i % 5], "amount": (i * 37) % 250 + 0.25, "items": i % 4}
              for i in range(400)]
    produce(kafka, source, [(i % 3, None, json.dumps(o).encode()) for i, o in enumerate(orders)])

    written = pipeline["run"](spark, kafka.client_config(), source, target, 100.0)

    want = Counter(
        (o["customer"].upper().encode(),
         json.dumps({"customer": o["customer"].upper(), "cents": round(o["amount"] * 100),
                     "items": o["items"]}, separators=(",", ":")).encode())
        for o in orders if o["amount"] >= 100)
    assert written == sum(want.values()) > 0
    got = confluent_read(kafka, target, 4, written)
    assert Counter((k, v) for _, _, k, v, _ in got) == want
    assert all(p == java_partition(k, 4) for p, _, k, _, _ in got)
