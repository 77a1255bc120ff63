"""Fixtures of the broker-version matrix: one Apache Kafka node per matrix release, shared by
every test of the module (the main release reuses the session's ``apache_kafka``), and the
``cell`` each test fills in and whose outcome is stored for tools/broker_matrix.py."""

from __future__ import annotations

import pytest
from harness.apache_kafka import (
    kafka_version,
    matrix_versions,
    require_apache_kafka,
    start_apache_kafka,
)
from matrix import FAILED, Cell, results_dir, write_result

_REPORT = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.stash[_REPORT] = report


@pytest.fixture(scope="module", params=matrix_versions(), ids=lambda v: f"kafka-{v}")
def matrix_kafka(request, tmp_path_factory):
    """One Apache Kafka node of the matrix release ``request.param`` for the module."""
    version = request.param
    require_apache_kafka(version)
    if version == kafka_version():
        yield request.getfixturevalue("apache_kafka")
        return
    cluster = start_apache_kafka(tmp_path_factory.mktemp(f"matrix-kafka-{version}"),
                                 version=version)
    yield cluster
    cluster.discard()


@pytest.fixture
def cell(request, matrix_kafka):
    """The test's matrix cell: its feature from the ``feature`` mark (formatted with the
    test's parameters), its release from ``matrix_kafka``; the outcome is stored after it."""
    mark = request.node.get_closest_marker("feature")
    if mark is None:
        raise RuntimeError(f"{request.node.nodeid} has no feature mark")
    params = {k: v for k, v in request.node.callspec.params.items() if k != "matrix_kafka"}
    current = Cell(mark.args[0].format(**params), matrix_kafka.version)
    yield current
    report = request.node.stash.get(_REPORT, None)
    if report is None or report.skipped:
        return
    if report.passed:
        outcome, detail = current.verdict()
    else:
        crash = getattr(report.longrepr, "reprcrash", None)
        outcome, detail = FAILED, crash.message if crash is not None else report.longreprtext
    write_result(results_dir(), current.feature, current.version, outcome,
                 records=current.records_checked, offsets=current.offsets_checked,
                 test=request.node.nodeid, detail=detail)
    if report.passed and outcome == FAILED:
        pytest.fail(f"{current.feature} on Kafka {current.version}: {detail}")
