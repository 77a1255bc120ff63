"""Core tests run against both implementations of the record engine: compiled and pure.

Under ``KAFKA_FAST_NO_EXTENSIONS=1`` (the pure pass of ``make test``) ``rec`` is the pure twin
only: the compiled pass already ran every test on both.
"""

from __future__ import annotations

import importlib

import pytest

from kafka_fast._impl import FORCED_PURE

IMPLS = {
    "native": "kafka_fast._native._records",
    "pure": "kafka_fast._pure.records",
}


@pytest.fixture(params=["pure"] if FORCED_PURE else sorted(IMPLS), scope="session")
def rec(request):
    """The record-engine module under test (``kafka_fast._native._records`` or the pure twin)."""
    return importlib.import_module(IMPLS[request.param])


@pytest.fixture(scope="session")
def native():
    return importlib.import_module(IMPLS["native"])


@pytest.fixture(scope="session")
def pure():
    return importlib.import_module(IMPLS["pure"])
