"""Registers the real-broker harness (tests/harness) for every test."""

import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
# Test directories are packages (unique module names across directories); their helper
# modules (e.g. readback.py) are imported by plain name, so each directory is on the path too.
for _path in [_TESTS, *sorted(p for p in _TESTS.iterdir() if (p / "__init__.py").exists())]:
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

pytest.register_assert_rewrite("harness")

pytest_plugins = [
    "harness.tansu", "harness.mock_cluster", "harness.apache_kafka", "harness.oauth2",
    "harness.fixtures", "harness.scheduling", "harness.spark_retry",
]


@pytest.fixture(autouse=True)
def _one_writer_per_field():
    """With KAFKA_FAST_CHECK_OWNERS=1, a test fails (in its teardown) when a field of consumer
    state got a second writing thread while it ran, on whichever thread that happened."""
    from kafka_fast.consumer import ownership

    if not ownership.ENABLED:
        yield
        return
    before = len(ownership.violations)
    yield
    new = ownership.violations[before:]
    assert not new, f"fields written by a second thread (class, field, owner, writer): {new}"
