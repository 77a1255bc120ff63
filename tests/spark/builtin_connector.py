"""Spark's built-in Kafka connector (``spark-sql-kafka-0-10``) for comparisons.

``package()`` names the Maven coordinate for the installed PySpark: its own version when
Maven Central has it, else the newest published release of the same major version (the
connector is published after PySpark itself; a Spark 4.x connector runs on any 4.x).
``session(...)`` starts a local Spark session that has it (and ``kafka_fast`` registered);
``read_rows(...)`` reads a topic with either connector as comparable rows.
"""

from __future__ import annotations

import os
import re
import sys
import urllib.request
from typing import Any

CENTRAL = "https://repo1.maven.org/maven2/org/apache/spark/spark-sql-kafka-0-10_2.13"


def _exists(url: str) -> bool:
    try:
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status == 200
    except OSError:
        return False


def package() -> str | None:
    """``org.apache.spark:spark-sql-kafka-0-10_2.13:<version>``, or None if none is found."""
    import pyspark

    version = pyspark.__version__
    if _exists(f"{CENTRAL}/{version}/spark-sql-kafka-0-10_2.13-{version}.pom"):
        return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{version}"
    try:
        with urllib.request.urlopen(f"{CENTRAL}/maven-metadata.xml", timeout=20) as resp:
            text = resp.read().decode()
    except OSError:
        return None

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    mine = key(version)
    released = [v for v in re.findall(r"<version>([\d.]+)</version>", text)
                if key(v)[0] == mine[0] and key(v) <= mine]
    if not released:
        return None
    return f"org.apache.spark:spark-sql-kafka-0-10_2.13:{max(released, key=key)}"


def session(coordinate: str, memory: str = "1g") -> Any:
    """A ``local[2]`` session with the built-in connector and ``format("kafka_fast")``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kafka_fast.spark

    spark = (SparkSession.builder.master("local[2]").appName("kafka_fast-vs-builtin")
             .config("spark.jars.packages", coordinate)
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", memory).config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.log.level", "ERROR")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kafka_fast.spark.register(spark)
    return spark


def read_rows(spark: Any, fmt: str, bootstrap: str, topic: str) -> list[list]:
    """Every record of ``topic`` read with ``format(fmt)``, as sorted JSON-able rows."""
    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("includeHeaders", "true").load())
    return sorted([r.topic, r.partition, r.offset, r.key.hex() if r.key is not None else None,
                   r.value.hex() if r.value is not None else None, r.timestamp.isoformat(),
                   r.timestampType, [[h.key, h.value.hex()] for h in r.headers or ()]]
                  for r in df.collect())
