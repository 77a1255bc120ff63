"""A matrix cell's verdict: what a passing test must have compared to count as tested."""

from __future__ import annotations

import pytest
from harness.apache_kafka import matrix_versions
from matrix import FAILED, PASSED, UNSUPPORTED, Cell, supported

NEWEST = matrix_versions()[-1]
LACKING = next(v for v in matrix_versions() if not supported("group-consumer", v))


def test_a_pass_that_compared_nothing_is_a_failure():
    cell = Cell("admin", NEWEST)
    assert cell.verdict() == (FAILED, "passed without comparing exact records or offsets")
    cell.offsets({0: 2}, {0: 2})
    assert cell.verdict() == (PASSED, "")


def test_comparisons_are_exact_and_counted():
    cell = Cell("consume", NEWEST)
    with pytest.raises(AssertionError):
        cell.records([(0, 0, b"k", b"v")], [(0, 1, b"k", b"v")])
    with pytest.raises(AssertionError, match="empty expectation"):
        cell.records([], [])
    cell.records([(0, 0, b"k", b"v"), (0, 1, b"k", b"w")], [(0, 0, b"k", b"v"), (0, 1, b"k", b"w")])
    assert (cell.records_checked, cell.offsets_checked) == (2, 0)


def test_an_unsupported_cell_needs_the_refusal_shown():
    cell = Cell("group-consumer", LACKING)
    assert not cell.supported
    cell.records([(0, 0)], [(0, 0)])
    assert cell.verdict()[0] == FAILED
    cell.refused()
    assert cell.verdict() == (UNSUPPORTED, "the client reported the broker's lack of it")
    with pytest.raises(AssertionError, match="is served by"):
        Cell("group-consumer", NEWEST).refused()


def test_the_main_broker_is_the_newest_release_of_the_matrix():
    from harness.apache_kafka import kafka_version
    from matrix import version_key

    versions = matrix_versions()
    assert versions == sorted(versions, key=version_key) and len(set(versions)) == len(versions)
    assert kafka_version() == versions[-1] == "4.4.0"
