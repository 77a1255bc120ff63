"""The data source's driver side loads no client: Spark forks Python processes that import
``kafka_fast.spark.datasource`` (to unpickle the source) several times per job and per
streaming micro-batch, and only the tasks that read and write need the client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import pyspark.sql.datasource, pyspark.sql.types  # loaded by Spark's worker already
before = set(sys.modules)
import pyspark_kafka_fast
import kafka_fast.spark.datasource
print(json.dumps(sorted(set(sys.modules) - before)))
"""

HEAVY = ("numpy", "pyarrow", "pandas", "kafka_fast.producer", "kafka_fast.consumer",
         "kafka_fast.net", "kafka_fast.admin", "kafka_fast.records", "kafka_fast._native")


def test_the_data_source_module_loads_no_client_numpy_or_pyarrow():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    loaded = json.loads(out)
    assert "kafka_fast.spark.datasource" in loaded and "kafka_fast.spark.sink" in loaded
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert heavy == []
