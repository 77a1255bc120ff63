"""Generic fixtures: ``kafka`` (a broker), ``broker`` (every broker kind), ``kcat``,
and broker logs attached to failed test reports."""

from __future__ import annotations

import os

import pytest

from harness.apache_kafka import apache_kafka_missing, require_apache_kafka
from harness.brokers import Broker, external_from_env
from harness.kcat import kcat_path

EXTERNAL = external_from_env()
# With KAFKA_BOOTSTRAP set, tests run against that cluster only. "kafka" is Apache
# Kafka itself, started by the harness.
BROKER_KINDS = ["external"] if EXTERNAL else ["kafka", "tansu", "mock"]


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _kafka_kind() -> str:
    """What the ``kafka`` fixture gives: "external", "apache", or "tansu" when Java or the
    Kafka jars are missing (outside CI)."""
    if EXTERNAL is not None:
        return "external"
    if apache_kafka_missing() is None or _ci():
        return "apache"
    return "tansu"


@pytest.fixture(scope="session")
def kafka(request) -> Broker:
    """The broker integration tests use: the external cluster when KAFKA_BOOTSTRAP is
    set, otherwise the session's Apache Kafka (Tansu when Java or the Kafka jars are
    missing; under CI=true that fails instead). ``.kind`` tells which."""
    kind = _kafka_kind()
    if kind == "external":
        return EXTERNAL
    if kind == "apache":
        require_apache_kafka()
        return request.getfixturevalue("apache_kafka")
    return request.getfixturevalue("tansu")


@pytest.fixture(params=BROKER_KINDS)
def broker(request) -> Broker:
    """Each broker kind in turn: Apache Kafka, Tansu and the mock cluster, or only the
    external one."""
    if request.param == "external":
        return EXTERNAL
    if request.param == "kafka":
        require_apache_kafka()
        return request.getfixturevalue("apache_kafka")
    if request.param == "tansu":
        return request.getfixturevalue("tansu")
    return request.getfixturevalue("mock_cluster")


@pytest.fixture(params=["kafka", "tansu"])
def real_broker(request) -> Broker:
    """The real brokers in turn: ``kafka`` (Apache Kafka, or KAFKA_BOOTSTRAP's cluster) and
    Tansu, for tests the mock cluster cannot serve."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def kcat() -> str | None:
    """Path of kcat, or None when it is not installed."""
    return kcat_path()


_TANSU_FIXTURES = {"tansu", "tansu_sasl", "tansu_tls"}
_MOCK_FIXTURES = {"mock_cluster", "fresh_mock_cluster"}
_APACHE_FIXTURES = {"apache_kafka", "apache_cluster", "apache_cluster_session",
                    "apache_share_kafka", "matrix_kafka"}
_MARK_FOR_KIND = {"kafka": "apache", "tansu": "tansu", "mock": "mock_cluster",
                  "external": "external"}


def pytest_collection_modifyitems(config, items):
    """Mark tests by the brokers they use, so ``-m apache`` / ``-m tansu`` /
    ``-m mock_cluster`` / ``-m external`` select them."""
    kafka_mark = _kafka_kind()
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        marks = set()
        if names & _TANSU_FIXTURES:
            marks.add("tansu")
        if names & _MOCK_FIXTURES:
            marks.add("mock_cluster")
        if names & _APACHE_FIXTURES:
            marks.add("apache")
        if "kafka" in names:
            marks.add(kafka_mark)
        callspec = getattr(item, "callspec", None)
        if "broker" in names and callspec is not None and "broker" in callspec.params:
            marks.add(_MARK_FOR_KIND[callspec.params["broker"]])
        if "real_broker" in names and callspec is not None and "real_broker" in callspec.params:
            marks.add(kafka_mark if callspec.params["real_broker"] == "kafka" else "tansu")
        for mark in sorted(marks):
            item.add_marker(mark)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    seen = set()
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Broker) and id(value) not in seen:
            seen.add(id(value))
            tail = value.log_tail()
            if tail:
                report.sections.append((f"{value.kind} broker log ({value.bootstrap})", tail))
