"""tests/harness/spark_retry.py: a Spark test failed by Spark's Python worker start timeout is
run again, up to three runs; any other failure, a timeout on every run, or a test without
Spark is not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CONFTEST = '''
import pytest
pytest_plugins = ["harness.spark_retry"]


def pytest_configure(config):
    import harness.spark_retry
    harness.spark_retry.PAUSE = 0.0

@pytest.fixture
def spark():
    return "session"
'''

CASES = '''
import pytest

RUNS = {}


def _count(name):
    RUNS[name] = RUNS.get(name, 0) + 1
    return RUNS[name]


def test_timed_out_once(spark, tmp_path):
    if _count("once") == 1:
        raise RuntimeError("[STREAM_FAILED] Python worker failed to connect back. SQLSTATE")


def test_timed_out_twice(spark):
    if _count("twice") <= 2:
        raise RuntimeError("Python worker failed to connect back.")


def test_timed_out_every_time(spark):
    _count("always")
    raise RuntimeError("Python worker failed to connect back.")


def test_another_failure(spark):
    _count("other")
    raise AssertionError("wrong rows")


def test_without_spark():
    _count("nospark")
    raise RuntimeError("Python worker failed to connect back.")


def test_counts():
    assert RUNS == {"once": 2, "twice": 3, "always": 3, "other": 1, "nospark": 1}
'''


def test_only_sparks_worker_timeout_runs_a_spark_test_again(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_cases.py").write_text(CASES)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
         "-o", "addopts=", "-W", "default", "-rA", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"})
    out = done.stdout
    outcomes = sorted(line.split(" ")[0] + " " + line.split("::")[1].split(" ")[0]
                      for line in out.splitlines() if line.startswith(("PASSED", "FAILED")))
    assert outcomes == ["FAILED test_another_failure", "FAILED test_timed_out_every_time",
                        "FAILED test_without_spark", "PASSED test_counts",
                        "PASSED test_timed_out_once", "PASSED test_timed_out_twice"], out
    assert " 5 warnings in " in out, out  # once ran again once; twice and always twice each
    assert "test_timed_out_once: run again after Spark's Python worker" in out
