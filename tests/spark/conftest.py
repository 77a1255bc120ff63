"""One local Spark session (``local[2]``) for every Spark test: small memory, no UI, quiet, the
driver's JVM with the client compiler only (harness.jvm_start)."""

from __future__ import annotations

import os
import sys

import pytest
from harness.jvm_start import QUICK_JVM
from harness.peers import require_java

from .builtin_connector import package

_PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.filterwarnings(_PANDAS_WARNING))
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def builtin_package() -> str | None:
    """The Maven coordinate of Spark's own Kafka connector, or None when it is unavailable."""
    if os.environ.get("KAFKA_FAST_SPARK_BUILTIN", "1") == "0":
        return None
    return package()


@pytest.fixture(scope="session")
def spark(builtin_package):
    """A ``local[2]`` SparkSession whose Python workers run this interpreter, with Spark's
    own Kafka connector when it can be resolved (one session for every Spark test: a JVM
    cannot load the connector after it started). Skips, one line, without Java; fails
    under CI=true."""
    require_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    if builtin_package is not None:
        builder = builder.config("spark.jars.packages", builtin_package)
    session = (
        builder.master("local[2]")
        .appName("kafka_fast-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.log.level", "ERROR")
        .config("spark.driver.extraJavaOptions", QUICK_JVM)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def both(spark, builtin_package):
    """The shared session, with both connectors."""
    if builtin_package is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Spark's Kafka connector (spark-sql-kafka-0-10) is not resolvable")
        pytest.skip("Spark's Kafka connector (spark-sql-kafka-0-10) is not resolvable")
    import kafka_fast.spark

    kafka_fast.spark.register(spark)
    return spark
