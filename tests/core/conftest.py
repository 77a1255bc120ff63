"""Core tests run against both implementations of the record engine: compiled and pure."""

from __future__ import annotations

import importlib

import pytest

IMPLS = {
    "native": "kafka_fast._native._records",
    "pure": "kafka_fast._pure.records",
}


@pytest.fixture(params=sorted(IMPLS), scope="session")
def rec(request):
    """The record-engine module under test (``kafka_fast._native._records`` or the pure twin)."""
    return importlib.import_module(IMPLS[request.param])


@pytest.fixture(scope="session")
def native():
    return importlib.import_module(IMPLS["native"])


@pytest.fixture(scope="session")
def pure():
    return importlib.import_module(IMPLS["pure"])
