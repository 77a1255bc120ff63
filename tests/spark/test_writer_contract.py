"""The Spark writers' partition column follows one rule in the Row and the Arrow path: an
integer >= 0, or null for the partitioner; anything else fails the task with the same error
before a record of its batch is produced (Spark's own Kafka sink fails the task too)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from harness import create_topic, unique_topic
from readback import high_watermarks

from kafka_fast.spark.columns import ColumnSpec, chunks
from kafka_fast.spark.writer import (
    arrow_partition_groups,
    send_arrow_batches,
    send_rows,
    write_kafka,
)


def _batch(partitions: list[int | None]) -> pa.RecordBatch:
    return pa.record_batch(
        [pa.array([b"v%d" % i for i in range(len(partitions))], pa.binary()),
         pa.array(partitions, pa.int32())],
        names=["value", "partition"])


@pytest.mark.parametrize("bad", [-5, -1, -(1 << 31)])
def test_arrow_and_row_paths_refuse_a_negative_partition_alike(bad):
    rows = [{"value": b"a", "partition": 1}, {"value": b"b", "partition": bad}]
    with pytest.raises(TypeError) as row_error:
        list(chunks(rows, ColumnSpec(partition_col="partition"), 100))
    with pytest.raises(TypeError) as arrow_error:
        arrow_partition_groups(_batch([1, bad]), "t")
    assert str(arrow_error.value) == str(row_error.value) == (
        f"column 'partition': a partition must be an integer >= 0, got {bad}")


def test_arrow_partition_nulls_leave_the_choice_to_the_partitioner():
    groups = arrow_partition_groups(_batch([None, 1, None, 0]), "t")
    assert [(t, p, g.column("value").to_pylist()) for t, p, g in groups] == [
        ("t", -1, [b"v0", b"v2"]), ("t", 0, [b"v3"]), ("t", 1, [b"v1"])]


def test_a_negative_partition_writes_nothing_from_either_path(kafka):
    """-5 went straight through the Arrow path (rows landed in partitions 1 and 0)."""
    topic = unique_topic("spark-contract")
    create_topic(kafka, topic, 2)
    conf = kafka.client_config()
    with pytest.raises(TypeError, match="a partition must be an integer >= 0, got -5"):
        send_arrow_batches([_batch([0, -5, 1])], conf, topic)
    rows = [{"value": b"v%d" % i, "partition": p} for i, p in enumerate([0, -5, 1])]
    with pytest.raises(TypeError, match="a partition must be an integer >= 0, got -5"):
        send_rows(rows, conf, topic, ColumnSpec(partition_col="partition"))
    assert send_arrow_batches([_batch([0, None, 1])], conf, topic).sent == 3
    assert sum(high_watermarks(kafka, topic, 2)) == 3


def test_spark_job_with_a_negative_partition_fails_and_writes_nothing(spark, kafka):
    from pyspark.sql import functions as F

    topic = unique_topic("spark-contract-job")
    create_topic(kafka, topic, 2)
    df = spark.range(50, numPartitions=1).select(
        F.format_string("v%d", F.col("id")).alias("value"),
        F.when(F.col("id") == 20, F.lit(-5)).otherwise(F.col("id") % 2).cast("int")
         .alias("part"))
    with pytest.raises(Exception, match="a partition must be an integer >= 0, got -5"):
        write_kafka(df, kafka.client_config(), topic, partition_col="part")
    assert high_watermarks(kafka, topic, 2) == [0, 0]
