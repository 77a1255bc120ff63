"""One local Spark session (``local[2]``) for every Spark test: small memory, no UI, quiet."""

from __future__ import annotations

import os
import sys

import pytest
from harness.peers import require_java

_PANDAS_WARNING = "ignore:PySpark does not yet fully support pandas:FutureWarning"


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.filterwarnings(_PANDAS_WARNING))
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark():
    """A ``local[2]`` SparkSession whose Python workers run this interpreter (skips, one
    line, without Java; fails under CI=true)."""
    require_java()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafka_fast-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .config("spark.log.level", "ERROR")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
