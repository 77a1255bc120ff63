"""Registers the real-broker harness (tests/harness) for every test."""

import sys
from pathlib import Path

import pytest

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

pytest.register_assert_rewrite("harness")

pytest_plugins = ["harness.tansu", "harness.mock_cluster", "harness.fixtures"]
