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
    "harness.fixtures",
]
