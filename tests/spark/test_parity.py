"""Option parity with Spark's own Kafka connector, side by side: every read and write runs
through ``format("kafka")`` (spark-sql-kafka-0-10) and ``format("kafka_fast")`` in one Spark
session, on the same Apache Kafka topics, and every column of every row is compared. Where
the built-in connector refuses an option, kafka_fast must refuse it too.

Each test names the options it shows with ``@covers(...)``; ``tools/gen_spark_options.py``
builds the option table of docs/spark.md from those names."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CTP
from confluent_kafka.admin import AdminClient
from harness import create_topic, unique_topic
from pyspark.sql import functions as F

pytestmark = pytest.mark.timeout(600)

BASE_TS = 1_700_000_000_000
N = 60  # records per topic of the shared fixture (3 partitions x 20)


def covers(*options: str):
    """The connector options a test shows (read by tools/gen_spark_options.py)."""
    def mark(fn):
        fn.covers = options
        return fn
    return mark


def produce(kafka, topic: str, items) -> None:
    """``(partition, key, value, timestamp_ms, headers)`` items, written in order."""
    producer = Producer(kafka.client_config({"linger.ms": 5}))
    errors = []
    for partition, key, value, ts, headers in items:
        producer.produce(topic, value=value, key=key, partition=partition, timestamp=ts,
                         headers=headers,
                         on_delivery=lambda err, _m: errors.append(err) if err else None)
    assert producer.flush(30) == 0 and not errors, errors


@pytest.fixture(scope="module")
def topic(kafka):
    """3 partitions x 20 records: timestamps BASE_TS + 10 * i, every 7th key null, headers
    on every other record (one with a null header value), one null value."""
    name = unique_topic("par")
    create_topic(kafka, name, 3)
    items = []
    for i in range(N):
        key = None if i % 7 == 0 else b"k%02d" % i
        value = None if i == 31 else b"v%02d" % i
        headers = [("n", b"%d" % i), ("empty", None)] if i % 2 else None
        items.append((i % 3, key, value, BASE_TS + 10 * i, headers))
    produce(kafka, name, items)
    return name


COLUMNS = ("topic", "partition", "offset", "key", "value", "timestamp", "timestampType")


def row_tuple(r) -> tuple:
    """Every column of a row; (topic, partition, offset) first, so rows sort."""
    d = r.asDict()
    headers = d.pop("headers", ())
    assert set(d) == set(COLUMNS), sorted(d)
    return (*(d[c] for c in COLUMNS),
            None if headers is None else tuple((h.key, h.value) for h in headers))


def outcome(spark, fmt: str, kafka, options: dict, schema=None):
    """("rows", columns, sorted rows) or ("error", message) of a batch read."""
    reader = spark.read.format(fmt)
    if schema is not None:
        reader = reader.schema(schema)
    reader = reader.option("kafka.bootstrap.servers", kafka.bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    try:
        df = reader.load()
        return ("rows", df.columns, sorted(row_tuple(r) for r in df.collect()))
    except Exception as exc:  # what the connector says, compared below
        return ("error", str(exc))


def same(spark, kafka, options: dict, *, refused: str | None = None, schema=None,
         rows: int | None = None):
    """Read with both connectors and compare. ``refused``: both must fail (the text is
    looked for in both messages, case-insensitively). ``rows``: how many both return."""
    builtin = outcome(spark, "kafka", kafka, options, schema)
    ours = outcome(spark, "kafka_fast", kafka, options, schema)
    if refused is not None:
        assert builtin[0] == "error", f"the built-in connector read {builtin[2][:3]}"
        assert ours[0] == "error", f"kafka_fast read {ours[2][:3]}; built-in: {builtin[1][:500]}"
        assert refused.lower() in builtin[1].lower(), builtin[1][:2000]
        assert refused.lower() in ours[1].lower(), ours[1][:2000]
        return None
    assert builtin[0] == "rows", builtin[1][:3000]
    assert ours == builtin
    if rows is not None:
        assert len(builtin[2]) == rows
    return builtin[2]


# ---------------------------------------------------------------------------------------------
# batch reads


@covers("kafka.bootstrap.servers", "subscribe", "includeHeaders")
def test_whole_topic_every_column(both, kafka, topic):
    rows = same(both, kafka, {"subscribe": topic}, rows=N)
    assert rows[0][-1] == ()  # no headers column without includeHeaders
    with_headers = same(both, kafka, {"subscribe": topic, "includeHeaders": "true"}, rows=N)
    assert sum(1 for r in with_headers if r[-1]) == N // 2
    same(both, kafka, {"subscribe": topic, "includeHeaders": "maybe"}, refused="maybe")


@covers("startingOffsets", "endingOffsets")
def test_offsets_as_json_and_words(both, kafka, topic):
    start = json.dumps({topic: {"0": 3, "1": -2, "2": 19}})
    end = json.dumps({topic: {"0": 9, "1": 4, "2": -1}})
    same(both, kafka, {"subscribe": topic, "startingOffsets": start, "endingOffsets": end},
         rows=6 + 4 + 1)
    same(both, kafka, {"subscribe": topic, "startingOffsets": "earliest",
                       "endingOffsets": "latest"}, rows=N)
    same(both, kafka, {"subscribe": topic, "startingOffsets": "latest"}, refused="latest")
    same(both, kafka, {"subscribe": topic, "endingOffsets": "earliest"}, refused="earliest")


@covers("startingTimestamp", "startingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy")
def test_starting_timestamps_and_both_strategies(both, kafka, topic):
    same(both, kafka, {"subscribe": topic, "startingTimestamp": str(BASE_TS + 305)}, rows=29)
    beyond = str(BASE_TS + 10 * N)
    same(both, kafka, {"subscribe": topic, "startingTimestamp": beyond}, refused="matched")
    same(both, kafka, {"subscribe": topic, "startingTimestamp": beyond,
                       "startingOffsetsByTimestampStrategy": "latest"}, rows=0)
    per_partition = json.dumps({topic: {"0": BASE_TS, "1": BASE_TS + 200,
                                        "2": BASE_TS + 10 * N}})
    same(both, kafka, {"subscribe": topic, "startingOffsetsByTimestamp": per_partition},
         refused="matched")
    same(both, kafka, {"subscribe": topic, "startingOffsetsByTimestamp": per_partition,
                       "startingOffsetsByTimestampStrategy": "latest"}, rows=20 + 13)
    # startingTimestamp wins over startingOffsetsByTimestamp, which wins over startingOffsets
    same(both, kafka, {"subscribe": topic, "startingTimestamp": str(BASE_TS + 500),
                       "startingOffsetsByTimestamp": per_partition,
                       "startingOffsets": "earliest"}, rows=10)


@covers("endingTimestamp", "endingOffsetsByTimestamp")
def test_ending_timestamps(both, kafka, topic):
    same(both, kafka, {"subscribe": topic, "endingTimestamp": "1"}, rows=0)
    same(both, kafka, {"subscribe": topic, "endingTimestamp": str(BASE_TS + 305)}, rows=31)
    same(both, kafka, {"subscribe": topic, "endingTimestamp": str(BASE_TS + 10 * N)}, rows=N)
    per_partition = json.dumps({topic: {"0": BASE_TS + 100, "1": BASE_TS + 10 * N,
                                        "2": 1}})
    same(both, kafka, {"subscribe": topic, "endingOffsetsByTimestamp": per_partition},
         rows=4 + 20)
    same(both, kafka, {"subscribe": topic, "endingTimestamp": str(BASE_TS + 100),
                       "endingOffsetsByTimestamp": per_partition}, rows=10)


@covers("assign")
def test_assign(both, kafka, topic):
    same(both, kafka, {"assign": json.dumps({topic: [0, 2]})}, rows=40)
    same(both, kafka, {"assign": json.dumps({topic: [True]})}, refused='{"topicA"')
    same(both, kafka, {"assign": "[1]"}, refused="assign")
    same(both, kafka, {"subscribe": topic, "assign": json.dumps({topic: [0]})},
         refused="subscribe")


@covers("subscribePattern")
def test_subscribe_pattern_is_found_anywhere_in_the_name(both, kafka):
    prefix = unique_topic("pat")
    for suffix, partitions in (("a", 1), ("b", 2), ("ab", 1), ("c", 1)):
        create_topic(kafka, f"{prefix}-{suffix}", partitions)
        produce(kafka, f"{prefix}-{suffix}",
                [(p, None, f"{suffix}{p}".encode(), BASE_TS, None) for p in range(partitions)])
    rows = same(both, kafka, {"subscribePattern": f"{prefix}-[ab]"}, rows=4)
    assert sorted(r[4] for r in rows) == [b"a0", b"ab0", b"b0", b"b1"]  # the values
    same(both, kafka, {"subscribePattern": f"^{prefix}-[ab]$"}, rows=3)
    same(both, kafka, {"subscribePattern": f"(?<name>{prefix})-c"}, rows=1)


@covers("minPartitions", "maxRecordsPerPartition")
def test_partitioning_options_give_the_same_rows(both, kafka, topic):
    for options in ({"minPartitions": "7"}, {"maxRecordsPerPartition": "6"},
                    {"minPartitions": "20", "maxRecordsPerPartition": "8"}):
        same(both, kafka, {"subscribe": topic, **options}, rows=N)

    def tasks(fmt: str, **options) -> int:
        return (both.read.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap)
                .option("subscribe", topic).options(**options).load().rdd.getNumPartitions())

    # minPartitions=7 over 3 x 20 records: round(20 / 60 * 7) = 2 tasks per Kafka partition
    assert tasks("kafka", minPartitions="7") == tasks("kafka_fast", minPartitions="7") == 6
    # kafka_fast cuts every range into pieces of at most maxRecordsPerPartition records
    assert tasks("kafka_fast", maxRecordsPerPartition="6") == 12
    same(both, kafka, {"subscribe": topic, "minPartitions": "0"}, refused="minPartitions")


@covers("failOnDataLoss")
def test_fail_on_data_loss_with_deleted_offsets(both, kafka):
    name = unique_topic("par-loss")
    create_topic(kafka, name, 1)
    produce(kafka, name, [(0, None, b"r%d" % i, BASE_TS + i, None) for i in range(10)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for fut in admin.delete_records([CTP(name, 0, 4)]).values():
        fut.result(30)
    start = json.dumps({name: {"0": 2}})
    same(both, kafka, {"subscribe": name}, rows=6)
    same(both, kafka, {"subscribe": name, "startingOffsets": start}, refused="")
    same(both, kafka, {"subscribe": name, "startingOffsets": start,
                       "failOnDataLoss": "false"}, rows=6)


@covers("groupIdPrefix", "kafka.group.id", "kafka.*", "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs", "kafkaConsumer.pollTimeoutMs")
def test_client_options_give_the_same_rows(both, kafka, topic):
    for options in ({"groupIdPrefix": "parity"}, {"kafka.group.id": f"g-{uuid.uuid4().hex}"},
                    {"kafka.max.partition.fetch.bytes": "100", "kafka.client.id": "parity"},
                    {"fetchOffset.numRetries": "1", "fetchOffset.retryIntervalMs": "10"},
                    {"kafkaConsumer.pollTimeoutMs": "30000"}):
        same(both, kafka, {"subscribe": topic, **options}, rows=N)
    for refused in ("auto.offset.reset", "key.deserializer", "value.deserializer",
                    "enable.auto.commit", "interceptor.classes"):
        same(both, kafka, {"subscribe": topic, f"kafka.{refused}": "x"}, refused=refused)


@covers("fetchOffset.numRetries", "fetchOffset.retryIntervalMs")
def test_offset_look_ups_are_retried(both, kafka):
    """A topic created while the look-up is being retried is read by both connectors.

    The topic appears before its record is written, so a look-up that lands in between reads
    the topic empty (either connector); that read is taken again, up to six times (on a
    loaded machine the gap between the topic and its record is wide), and an error instead
    of rows fails at once.
    """
    for fmt in ("kafka", "kafka_fast"):
        for _attempt in range(6):
            name = unique_topic("par-late")

            def create_later(name=name):
                time.sleep(1.0)
                create_topic(kafka, name, 1)
                produce(kafka, name, [(0, b"k", b"late", BASE_TS, None)])

            thread = threading.Thread(target=create_later)
            thread.start()
            try:
                rows = (both.read.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap)
                        .option("subscribe", name).option("fetchOffset.numRetries", "20")
                        .option("fetchOffset.retryIntervalMs", "500").load().collect())
            finally:
                thread.join(30)
            assert [(r.key, r.value) for r in rows] in ([], [(b"k", b"late")]), fmt
            if rows:
                break
        assert [(r.key, r.value) for r in rows] == [(b"k", b"late")], fmt


@covers(".schema(...)", "maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
def test_user_schema_and_streaming_only_options_in_a_batch(both, kafka, topic):
    same(both, kafka, {"subscribe": topic}, schema="key binary, value binary",
         refused="schema")
    # rate limits mean nothing to a batch read: both read everything
    same(both, kafka, {"subscribe": topic, "maxOffsetsPerTrigger": "5",
                       "minOffsetsPerTrigger": "2", "maxTriggerDelay": "1s"}, rows=N)
    same(both, kafka, {"subscribe": topic, "maxOffsetsPerTrigger": "5",
                       "minOffsetsPerTrigger": "100"}, refused="minOffsetPerTrigger")


# ---------------------------------------------------------------------------------------------
# streaming reads


class Stream:
    """A running ``fmt`` stream into foreachBatch; ``sizes()`` of its non-empty batches."""

    def __init__(self, spark, fmt: str, kafka, options: dict, checkpoint: str, **trigger):
        self.batches: list[list] = []
        self._lock = threading.Lock()
        reader = spark.readStream.format(fmt).option("kafka.bootstrap.servers",
                                                     kafka.bootstrap)
        for k, v in options.items():
            reader = reader.option(k, v)
        self.query = (reader.load().writeStream.foreachBatch(self._keep)
                      .option("checkpointLocation", checkpoint).trigger(**trigger).start())

    def _keep(self, df, _batch_id):
        rows = sorted(row_tuple(r) for r in df.collect())
        if rows:
            with self._lock:
                self.batches.append(rows)

    def sizes(self) -> list[int]:
        with self._lock:
            return [len(b) for b in self.batches]

    def wait_for(self, count: int, timeout: float = 60) -> list[int]:
        deadline = time.monotonic() + timeout
        while len(self.sizes()) < count and time.monotonic() < deadline:
            assert self.query.exception() is None, self.query.exception()
            time.sleep(0.2)
        return self.sizes()

    def finish(self, timeout: float = 120) -> list[list]:
        self.query.awaitTermination(timeout)
        self.query.stop()
        assert self.query.exception() is None, self.query.exception()
        return self.batches


@covers("maxOffsetsPerTrigger", "startingOffsets")
def test_stream_max_offsets_per_trigger(both, kafka, topic, tmp_path):
    got = {fmt: Stream(both, fmt, kafka, {"subscribe": topic, "startingOffsets": "earliest",
                                          "maxOffsetsPerTrigger": "25"},
                       str(tmp_path / fmt), availableNow=True).finish()
           for fmt in ("kafka", "kafka_fast")}
    assert [len(b) for b in got["kafka"]] == [24, 24, 12]  # 8 of each partition's 20 first
    assert got["kafka_fast"] == got["kafka"]


@covers("minOffsetsPerTrigger", "maxTriggerDelay")
def test_stream_min_offsets_per_trigger_and_max_trigger_delay(both, kafka, tmp_path):
    """First trigger: everything there. Then 5 new records: fewer than minOffsetsPerTrigger,
    so no batch until 40 more come (maxTriggerDelay 1h) or until maxTriggerDelay (3s)."""
    def more(name, tag, n):
        produce(kafka, name, [(i % 2, None, b"%s%d" % (tag, i), BASE_TS, None)
                              for i in range(n)])

    results = {}
    for fmt in ("kafka", "kafka_fast"):
        for delay in ("1h", "3s"):
            name = unique_topic("par-min")
            create_topic(kafka, name, 2)
            more(name, b"a", 10)
            stream = Stream(both, fmt, kafka, {
                "subscribe": name, "startingOffsets": "earliest", "minOffsetsPerTrigger": "30",
                "maxTriggerDelay": delay}, str(tmp_path / f"{fmt}-{delay}"),
                processingTime="500 milliseconds")
            try:
                assert stream.wait_for(1) == [10]
                more(name, b"b", 5)
                if delay == "1h":
                    time.sleep(4)  # several triggers: 5 < 30 new records, no batch
                else:
                    stream.wait_for(2)  # after maxTriggerDelay
                more(name, b"c", 40)
                results[(fmt, delay)] = stream.wait_for(3 if delay == "3s" else 2)
            finally:
                stream.query.stop()
    assert results[("kafka", "1h")] == [10, 45], results
    assert results[("kafka", "3s")] == [10, 5, 40], results
    assert results[("kafka_fast", "1h")] == results[("kafka", "1h")]
    assert results[("kafka_fast", "3s")] == results[("kafka", "3s")]


@covers("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
def test_stream_refuses_ending_offsets(both, kafka, topic, tmp_path):
    for fmt in ("kafka", "kafka_fast"):
        with pytest.raises(Exception, match="(?i)ending"):
            Stream(both, fmt, kafka, {"subscribe": topic, "endingOffsets": "latest"},
                   str(tmp_path / f"{fmt}-offsets"), availableNow=True).finish()
    # Spark's connector does not refuse the timestamp forms in a stream (nor use them):
    # kafka_fast refuses them rather than ignore them
    for option, value in (("endingTimestamp", "1"),
                          ("endingOffsetsByTimestamp", json.dumps({topic: {"0": 1}}))):
        with pytest.raises(Exception, match="(?i)ending"):
            Stream(both, "kafka_fast", kafka, {"subscribe": topic, option: value},
                   str(tmp_path / f"fast-{option}"), availableNow=True).finish()


# ---------------------------------------------------------------------------------------------
# writes


def written(spark, kafka, topic: str) -> list[tuple]:
    """What a topic holds, read with the built-in connector: (partition, offset, key, value,
    headers, timestampType), sorted."""
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
          .option("subscribe", topic).option("includeHeaders", "true").load())
    return sorted((r.partition, r.offset, r.key, r.value,
                   tuple((h.key, h.value) for h in r.headers or ()), r.timestampType)
                  for r in df.collect())


def write_both(spark, kafka, df, partitions: int, *, options=None, topic_column=False):
    """Write ``df`` with each connector to its own new topic; what each topic holds."""
    out = {}
    for fmt in ("kafka", "kafka_fast"):
        name = unique_topic(f"par-w-{fmt.replace('_', '')}")
        create_topic(kafka, name, partitions)
        frame = df.withColumn("topic", F.lit(name)) if topic_column else df
        writer = frame.write.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap)
        if not topic_column:
            writer = writer.option("topic", name)
        for k, v in (options or {}).items():
            writer = writer.option(k, v)
        writer.mode("append").save()
        out[fmt] = written(spark, kafka, name)
    return out


@covers("topic", "key", "value", "partition", "headers")
def test_sink_columns_and_topic_option(both, kafka):
    df = both.range(40, numPartitions=1).select(
        F.when(F.col("id") % 5 == 0, F.lit(None))
         .otherwise(F.format_string("k%d", F.col("id"))).alias("key"),
        F.format_string("v%d", F.col("id")).cast("binary").alias("value"),
        (F.col("id") % 3).cast("int").alias("partition"),
        F.array(F.struct(F.lit("id").alias("key"),
                         F.col("id").cast("string").cast("binary").alias("value"))
                ).alias("headers"))
    got = write_both(both, kafka, df, 3)
    assert len(got["kafka"]) == 40
    assert got["kafka_fast"] == got["kafka"]  # same partitions, offsets, keys, values, headers
    by_column = write_both(both, kafka, df, 3, topic_column=True)
    assert by_column["kafka_fast"] == by_column["kafka"] == got["kafka"]
    # the option wins over a topic column
    with_both = write_both(both, kafka, df.withColumn("topic", F.lit("elsewhere")), 3)
    assert with_both["kafka_fast"] == with_both["kafka"] == got["kafka"]


@covers("key")
def test_sink_keys_choose_the_partition_as_java_does(both, kafka):
    df = both.range(200, numPartitions=1).select(
        F.format_string("key-%d", F.col("id")).alias("key"),
        F.format_string("v%d", F.col("id")).alias("value"))
    got = write_both(both, kafka, df, 4)
    assert got["kafka_fast"] == got["kafka"]
    # null keys: no partition is implied (sticky partitioners differ); the same records
    nulls = write_both(both, kafka, df.select(F.lit(None).cast("binary").alias("key"), "value"), 4)
    assert Counter(r[2:] for r in nulls["kafka_fast"]) == Counter(r[2:] for r in nulls["kafka"])


@covers("mode", "kafka.*", "value", "topic")
def test_sink_refusals(both, kafka):
    name = unique_topic("par-w-refuse")
    create_topic(kafka, name, 1)
    ok = both.createDataFrame([(b"k", b"v")], "key binary, value binary")
    cases = [
        (ok, {"topic": name}, "overwrite", "overwrite"),
        (ok, {"topic": name, "kafka.key.serializer": "x"}, "append", "key.serializer"),
        (ok, {"topic": name, "kafka.value.serializer": "x"}, "append", "value.serializer"),
        (ok.select("key"), {"topic": name}, "append", "value"),
        (both.createDataFrame([(1,)], "value int"), {"topic": name}, "append", "value"),
        (ok, {}, "append", "topic"),
    ]
    for df, options, mode, named in cases:
        for fmt in ("kafka", "kafka_fast"):
            writer = df.write.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap)
            for k, v in options.items():
                writer = writer.option(k, v)
            with pytest.raises(Exception, match=f"(?i){named}"):
                writer.mode(mode).save()
    assert written(both, kafka, name) == []


def test_option_table_is_generated_from_these_tests():
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parents[2] / "tools" / "gen_spark_options.py"
    done = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
