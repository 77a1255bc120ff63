"""More runs for a Spark test that Spark failed before any code of ours ran.

Spark gives each Python worker it starts ten seconds to connect back to the JVM (a constant in
``PythonWorkerFactory.createSimpleWorker``, which no setting changes). The worker imports
pyspark from the ``pyspark.zip`` Spark puts first on its path, which holds no bytecode: every
worker compiles pyspark's modules afresh (2.1 s for a streaming source's runner on an idle
machine of this kind, 0.4 s from the installed package). On a loaded two-core machine that
can pass ten seconds, and Spark then fails the query with "Python worker failed to connect
back" before a data source (ours or Spark's) has read a record. A test using the ``spark``
fixture that fails that way is run again, up to ``RUNS`` times in all, its function fixtures
set up afresh, after a pause (a burst of load from the other workers passes), with a warning
naming it each time; any other failure, or the same one on every run, fails the test.
"""

from __future__ import annotations

import time
import warnings

import pytest
from _pytest.runner import runtestprotocol

#: What Spark says when a Python worker it started did not connect back in time.
SPARK_WORKER_TIMEOUT = "Python worker failed to connect back"
#: runs of a test that Spark's worker start keeps failing, and the pause before each rerun (s)
RUNS = 3
PAUSE = 5.0


class SparkWorkerStartWarning(UserWarning):
    """A Spark test ran again after Spark's Python worker did not connect back in time."""


def _worker_timed_out(reports: list[pytest.TestReport]) -> bool:
    return any(r.failed and SPARK_WORKER_TIMEOUT in str(r.longrepr) for r in reports)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run a ``spark`` test, and again (up to ``RUNS`` in all) while Spark's Python worker
    does not connect back."""
    if "spark" not in getattr(item, "fixturenames", ()):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    runs = 1
    while runs < RUNS and _worker_timed_out(reports):
        warnings.warn(SparkWorkerStartWarning(
            f"{item.nodeid}: run again after Spark's Python worker did not connect back "
            "within Spark's 10 s"), stacklevel=1)
        time.sleep(PAUSE)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        runs += 1
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
