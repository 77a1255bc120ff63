"""Registers the real-broker harness (tests/harness) for every test."""

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

pytest_plugins = ["harness.tansu", "harness.mock_cluster", "harness.fixtures"]
