"""One more run for a Spark test that Spark failed before any code of ours ran.

Spark gives each Python worker it starts ten seconds to connect back to the JVM (a constant in
``PythonWorkerFactory.createSimpleWorker``, which no setting changes). On a loaded two-core
machine the interpreter's start and pyspark's own imports can take longer, and Spark then
fails the query with "Python worker failed to connect back" before a data source (ours or
Spark's) has read a record. A test using the ``spark`` fixture that fails that way is run once
more, its function fixtures set up afresh, with a warning naming it; any other failure, or the
same one twice, fails the test.
"""

from __future__ import annotations

import warnings

import pytest
from _pytest.runner import runtestprotocol

#: What Spark says when a Python worker it started did not connect back in time.
SPARK_WORKER_TIMEOUT = "Python worker failed to connect back"


class SparkWorkerStartWarning(UserWarning):
    """A Spark test ran again after Spark's Python worker did not connect back in time."""


def _worker_timed_out(reports: list[pytest.TestReport]) -> bool:
    return any(r.failed and SPARK_WORKER_TIMEOUT in str(r.longrepr) for r in reports)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run a ``spark`` test, and once more if Spark's Python worker did not connect back."""
    if "spark" not in getattr(item, "fixturenames", ()):
        return None
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    if _worker_timed_out(reports):
        warnings.warn(SparkWorkerStartWarning(
            f"{item.nodeid}: run again after Spark's Python worker did not connect back "
            "within Spark's 10 s"), stacklevel=1)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
