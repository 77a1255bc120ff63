"""A Spark Structured Streaming pipeline on Kafka with the ``kafka_fast`` data source.

Orders arrive as JSON (``{"customer": "ada", "amount": 12.5, "items": 2}``) on the source
topic. The query keeps the orders of at least ``--min-amount``, re-keys them by customer and
writes them as JSON with the amount in cents to the target topic, exactly once (one Kafka
transaction per task and micro-batch, committed with the micro-batch). Offsets live in the
checkpoint: run it again with the same ``--checkpoint`` and it carries on where it stopped.

    python examples/spark_streaming.py --bootstrap 127.0.0.1:9092 --source orders \\
        --target large-orders --checkpoint /tmp/orders-ckpt [--available-now]
"""

from __future__ import annotations

import argparse
import os
import sys

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

import kafka_fast.spark

ORDER_SCHEMA = "customer string, amount double, items int"


def transform(orders: DataFrame, min_amount: float) -> DataFrame:
    """Kafka records of JSON orders -> (key, value) of the large ones."""
    parsed = orders.select(F.from_json(F.col("value").cast("string"), ORDER_SCHEMA).alias("o"))
    customer = F.upper(F.col("o.customer"))
    return parsed.where(F.col("o.amount") >= min_amount).select(
        customer.alias("key"),
        F.to_json(F.struct(
            customer.alias("customer"),
            F.round(F.col("o.amount") * 100).cast("long").alias("cents"),
            F.col("o.items").alias("items"),
        )).alias("value"),
    )


def start(spark: SparkSession, bootstrap: str, source: str, target: str, checkpoint: str,
          min_amount: float = 100.0, available_now: bool = False) -> StreamingQuery:
    """Start the query (``available_now``: process what is there, then stop)."""
    kafka_fast.spark.register(spark)
    orders = (spark.readStream.format("kafka_fast")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", source)
              .option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 100_000)
              .load())
    writer = (transform(orders, min_amount).writeStream.format("kafka_fast")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("topic", target)
              .option("exactlyOnce", "true")
              .option("transactionalIdPrefix", f"orders-{target}")
              .option("checkpointLocation", checkpoint))
    if available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime="5 seconds")
    return writer.start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="bootstrap.servers")
    parser.add_argument("--source", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--min-amount", type=float, default=100.0)
    parser.add_argument("--available-now", action="store_true",
                        help="process what the topic holds now, then stop")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(args.master).appName("kafka_fast-streaming")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        query = start(spark, args.bootstrap, args.source, args.target, args.checkpoint,
                      args.min_amount, args.available_now)
        query.awaitTermination()
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
