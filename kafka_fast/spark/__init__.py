"""PySpark integration: write DataFrames and RDDs to Kafka, read topics into DataFrames.

Writing:
- ``foreach_partition_writer(conf, topic, ...)`` -> function for ``df.foreachPartition`` /
  ``rdd.foreachPartition``; raises ``DeliveryError`` when a record of the partition failed.
- ``map_partitions_producer(conf, topic, ...)`` -> function for ``rdd.mapPartitions`` yielding
  ``(partition_index, records_sent, records_failed)`` per Spark partition.
- ``write_kafka(df, conf, topic, ...)`` -> records delivered; goes through Arrow by default.
- ``df_to_kafka_columns(df, ...)`` -> ``df`` reduced to Spark's Kafka-sink columns in Spark SQL.

Reading:
- ``read_kafka(spark, conf, topic_or_topics, starting_offsets, ending_offsets, ...)`` ->
  DataFrame with Spark's Kafka source schema (``KAFKA_SCHEMA``).
- ``offset_ranges(conf, topics, ...)`` -> the ``OffsetRange`` list a read would cover.

Data source (PySpark 4 Python Data Source API):
- ``register(spark)`` -> ``spark.read`` / ``readStream`` / ``write`` / ``writeStream``
  ``.format("kafka_fast")`` with the options of Spark's built-in Kafka source and sink.

Executors build their clients from the plain ``conf`` dict; one producer (and one consumer)
per executor Python worker is cached and reused across tasks. pyspark and pyarrow are needed
only where Spark runs (``pip install kafka_fast[spark]``).
"""

from __future__ import annotations

from typing import Any

from .clients import close_all
from .offsets import DataLossError, OffsetRange, split_ranges
from .reader import KAFKA_SCHEMA, offset_ranges, ranges_to_dataframe, read_kafka
from .writer import (
    DeliveryError,
    df_to_kafka_columns,
    foreach_partition_writer,
    map_partitions_producer,
    write_kafka,
)


def register(spark: Any) -> None:
    """Register the ``kafka_fast`` data source with a SparkSession (see ``datasource``)."""
    from .datasource import register as _register

    _register(spark)


__all__ = [
    "KAFKA_SCHEMA",
    "DataLossError",
    "DeliveryError",
    "OffsetRange",
    "close_all",
    "df_to_kafka_columns",
    "foreach_partition_writer",
    "map_partitions_producer",
    "offset_ranges",
    "ranges_to_dataframe",
    "read_kafka",
    "register",
    "split_ranges",
    "write_kafka",
]
