"""A Spark batch pipeline on Kafka with kafka_fast: read a topic, transform, write another.

Orders arrive as JSON (``{"customer": "ada", "amount": 12.5, "items": 2}``) on the source
topic. The job keeps the orders of at least ``--min-amount``, re-keys them by customer (so
each customer's orders land on one partition, as with Spark's own Kafka sink), and writes
them as JSON with the amount in cents, keeping the source timestamps.

    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092 --source orders \\
        --target large-orders [--min-amount 100] [--master local[2]]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_fast.spark import read_kafka, write_kafka

ORDER_SCHEMA = "customer string, amount double, items int"


def transform(orders: DataFrame, min_amount: float) -> DataFrame:
    """Kafka records of JSON orders -> (key, value, timestamp) of the large ones."""
    parsed = orders.select(
        F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"), "timestamp")
    large = parsed.where(F.col("o.amount") >= min_amount)
    customer = F.upper(F.col("o.customer"))
    return large.select(
        customer.alias("key"),
        F.to_json(F.struct(
            customer.alias("customer"),
            F.round(F.col("o.amount") * 100).cast("long").alias("cents"),
            F.col("o.items").alias("items"),
        )).alias("value"),
        F.col("timestamp"),
    )


def run(spark: SparkSession, conf: dict[str, Any], source: str, target: str,
        min_amount: float = 100.0) -> int:
    """Read all of ``source``, write the transformed records to ``target``; returns the count."""
    orders = read_kafka(spark, conf, source)
    return write_kafka(transform(orders, min_amount), conf, target, key_col="key",
                       timestamp_col="timestamp")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="bootstrap.servers")
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--min-amount", type=float, default=100.0)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(args.master).appName("kafka_fast-pipeline")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        written = run(spark, {"bootstrap.servers": args.bootstrap}, args.source, args.target,
                      args.min_amount)
    finally:
        spark.stop()
    print(f"wrote {written} orders to {args.target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
