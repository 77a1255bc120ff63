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
from matrix import FAILED, PASSED, UNSUPPORTED, results_dir, supported, write_result

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


class Cell:
    """One (feature, release) of the matrix. Tests compare through ``records`` and
    ``offsets`` (exact equality, counted); a passing test that compared nothing fails."""

    def __init__(self, feature_id: str, version: str) -> None:
        self.feature = feature_id
        self.version = version
        self.supported = supported(feature_id, version)
        self.records_checked = 0
        self.offsets_checked = 0
        self.refusal_checked = False

    def records(self, got: list, want: list) -> None:
        """Assert the exact records (lists of tuples, in order) and count them."""
        assert want, "an empty expectation shows nothing"
        assert got == want
        self.records_checked += len(want)

    def offsets(self, got: dict | list, want: dict | list) -> None:
        """Assert exact offsets (by partition or in order) and count them."""
        assert want, "an empty expectation shows nothing"
        assert got == want
        self.offsets_checked += len(want)

    def refused(self) -> None:
        """The broker lacks the feature and the test saw the client's error saying so."""
        assert not self.supported, f"{self.feature} is served by Kafka {self.version}"
        self.refusal_checked = True

    def verdict(self) -> tuple[str, str]:
        """(outcome, detail) of a test whose body passed."""
        if not self.supported:
            if self.refusal_checked:
                return UNSUPPORTED, "the client reported the broker's lack of it"
            return FAILED, "unsupported release, but the refusal was not checked"
        if self.records_checked + self.offsets_checked == 0:
            return FAILED, "passed without comparing exact records or offsets"
        return PASSED, ""


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
        outcome, detail = FAILED, report.longreprtext.splitlines()[-1] if report.longreprtext else ""
    write_result(results_dir(), current.feature, current.version, outcome,
                 records=current.records_checked, offsets=current.offsets_checked,
                 test=request.node.nodeid, detail=detail)
    if report.passed and outcome == FAILED:
        pytest.fail(f"{current.feature} on Kafka {current.version}: {detail}")
