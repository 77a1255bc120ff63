"""The driver of the Spark cluster tests (``tests/spark/test_cluster.py``), run as its own
process: a test process may already hold a local SparkContext, and a JVM has one.

    python tests/spark/cluster_driver.py MASTER BOOTSTRAP TOPIC N SRC OUT CHECKPOINT PREFIX [PACKAGE]

One session runs both scenarios in turn: the batch write and reads of ``TOPIC`` (and Spark's
own connector's read when ``PACKAGE`` is given), then the exactly-once stream ``SRC`` ->
``OUT``. The session's executors find ``kafka_fast`` through the session's own configuration
(``spark.pyspark.python`` and ``spark.executorEnv.PYTHONPATH``, set here from this file's
location), not through the environment of whoever started the cluster. Output: lines of
JSON on stdout (``{"batch": ...}``, then ``{"progress": ...}`` while the stream runs, then
``{"stream": ...}``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = str(Path(__file__).resolve().parents[2])
EXECUTORS = 2


def emit(obj: Any) -> None:
    print(json.dumps(obj), flush=True)


def session(master: str, package: str | None = None) -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafka_fast.spark

    builder = SparkSession.builder.master(master).appName("kafka_fast-cluster-tests")
    if package:
        builder = builder.config("spark.jars.packages", package)
    spark = (builder
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.memory", "768m")
             .config("spark.executor.memory", "512m")
             .config("spark.executor.cores", "1")
             .config("spark.cores.max", str(EXECUTORS))
             .config("spark.pyspark.python", sys.executable)
             .config("spark.executorEnv.PYTHONPATH", ROOT)
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.log.level", "ERROR")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafka_fast.spark.register(spark)
    wait_for_executors(spark, EXECUTORS)
    return spark


def wait_for_executors(spark: Any, want: int, timeout: float = 120.0) -> None:
    """Wait until ``want`` executors have registered (they start after the session)."""
    jsc = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout
    while jsc.getExecutorIds().size() < want:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{want} executors not registered after {timeout} s")
        time.sleep(0.2)


def where_udf() -> Any:
    """A UDF giving the session of the executor running the task: each Spark worker of the
    test cluster leads its own session (its JVM, its executors and their Python workers;
    PySpark's Python workers make process groups of their own, but stay in the session)."""
    from pyspark.sql import functions as F

    @F.udf("string")
    def where(_: Any) -> str:
        import kafka_fast

        # also proves where the executor's kafka_fast comes from
        return f"{os.getsid(0)}:{Path(kafka_fast.__file__).resolve().parents[1]}"

    return where


def batch(spark: Any, bootstrap: str, src: str, n: int, package: str | None,
          session_seconds: float) -> dict[str, Any]:
    from pyspark.sql import functions as F

    started = time.monotonic()
    out: dict[str, Any] = {"seconds": {"session": session_seconds}}

    def lap(name: str) -> None:
        nonlocal started
        out["seconds"][name] = round(time.monotonic() - started, 1)
        started = time.monotonic()

    where = where_udf()
    rows = spark.range(0, n, numPartitions=4).select(
        F.format_string("k%05d", "id").alias("key"),
        F.format_string("v%05d", "id").alias("value"),
        F.array(F.struct(F.lit("where").alias("key"),
                         F.encode(where("id"), "utf-8").alias("value"))).alias("headers"))
    (rows.write.format("kafka_fast").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", src).mode("append").save())
    lap("write")

    def read(fmt: str, topic: str) -> list[list[Any]]:
        df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("minPartitions", "6").load())
        df = df.withColumn("where", where("offset"))
        return sorted([r.partition, r.offset, r.key.decode(), r.value.decode(), r.where]
                      for r in df.collect())

    out["kafka_fast"] = read("kafka_fast", src)
    lap("read")
    if package:
        out["builtin"] = read("kafka", src)
        lap("builtin")
    return out


def stream(spark: Any, bootstrap: str, src: str, dst: str, checkpoint: str,
           prefix: str) -> dict[str, Any]:
    from pyspark.sql import functions as F

    started = time.monotonic()

    @F.udf("binary")
    def slowly(value: bytes) -> bytes:
        time.sleep(0.004)  # micro-batches that take a while: a worker dies inside one
        return value

    query = (spark.readStream.format("kafka_fast")
             .option("kafka.bootstrap.servers", bootstrap).option("subscribe", src)
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "250")
             .load()
             .select("key", slowly("value").alias("value"))
             .writeStream.format("kafka_fast")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
             .option("exactlyOnce", "true").option("transactionalIdPrefix", prefix)
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    seen = -1
    deadline = time.monotonic() + 420
    while query.isActive and time.monotonic() < deadline:
        progress = query.lastProgress
        if progress is not None and progress["batchId"] != seen:
            seen = progress["batchId"]
            emit({"progress": seen, "rows": progress["numInputRows"],
                  "seconds": round(time.monotonic() - started, 1)})
        time.sleep(0.05)
    query.awaitTermination(max(1.0, deadline - time.monotonic()))
    error = query.exception()
    if query.lastProgress is not None:
        seen = max(seen, query.lastProgress["batchId"])
    executors = spark.sparkContext._jsc.sc().getExecutorIds().size()
    return {"error": None if error is None else str(error), "last_batch": seen,
            "active": query.isActive, "executors": executors,
            "seconds": round(time.monotonic() - started, 1)}


def main(argv: list[str]) -> int:
    master, bootstrap, topic, n, src, dst, checkpoint, prefix, *package = argv
    started = time.monotonic()
    spark = session(master, package[0] if package else None)
    try:
        emit({"batch": batch(spark, bootstrap, topic, int(n), package[0] if package else None,
                             round(time.monotonic() - started, 1))})
        emit({"stream": stream(spark, bootstrap, src, dst, checkpoint, prefix)})
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
