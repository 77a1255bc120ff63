"""Offset specs, range checks and range splitting (pure functions, no Spark or broker)."""

from __future__ import annotations

import json

import pytest

from kafka_fast.spark.offsets import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetRange,
    check_specs,
    make_ranges,
    pack_ranges,
    parse_offsets,
    spark_ranges,
    spec_for,
    split_ranges,
)


def test_parse_keywords_and_json_forms():
    assert parse_offsets("earliest", name="s") == EARLIEST
    assert parse_offsets(" LATEST ", name="s") == LATEST
    spec = {"a": {"0": 23, "1": -2}, "b": {"0": -1}}
    want = {("a", 0): 23, ("a", 1): -2, ("b", 0): -1}
    assert parse_offsets(json.dumps(spec), name="s") == want
    assert parse_offsets(spec, name="s") == want
    assert parse_offsets({"a": {0: 5}}, name="s") == {("a", 0): 5}


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("soonest", "must be 'earliest', 'latest' or a JSON object"),
        ("[1, 2]", "JSON object of topics"),
        ('{"a": 3}', "must map topic names"),
        ('{"a": {"x": 3}}', "partition 'x' of topic 'a' is not an integer"),
        ('{"a": {"0": -3}}', "offset -3 for a-0"),
        ('{"a": {"0": 1.5}}', "offset 1.5 for a-0"),
        ('{"a": {"0": true}}', "offset True for a-0"),
    ],
)
def test_parse_rejects_with_a_named_reason(bad, fragment):
    with pytest.raises(ValueError) as info:
        parse_offsets(bad, name="ending_offsets")
    assert fragment in str(info.value)


def test_batch_reads_reject_latest_start_and_earliest_end():
    check_specs(EARLIEST, LATEST)
    check_specs({("a", 0): 4}, {("a", 0): LATEST})
    with pytest.raises(ValueError, match="starting_offsets cannot be 'latest'"):
        check_specs(LATEST, LATEST)
    with pytest.raises(ValueError, match="ending_offsets cannot be 'earliest'"):
        check_specs(EARLIEST, EARLIEST)
    with pytest.raises(ValueError, match=r"starting_offsets cannot be -1 .*\('a', 1\)"):
        check_specs({("a", 0): 0, ("a", 1): LATEST}, LATEST)
    with pytest.raises(ValueError, match=r"ending_offsets cannot be -2 .*\('a', 0\)"):
        check_specs(EARLIEST, {("a", 0): EARLIEST})


def test_spec_for_expands_keywords_and_requires_every_partition():
    parts = [("a", 1), ("a", 0)]
    assert spec_for(EARLIEST, parts, name="s") == {("a", 0): EARLIEST, ("a", 1): EARLIEST}
    assert spec_for({("a", 0): 3, ("a", 1): -1}, parts, name="s") == {("a", 0): 3, ("a", 1): -1}
    with pytest.raises(ValueError, match=r"missing \[\('a', 1\)\], unknown \[\('b', 0\)\]"):
        spec_for({("a", 0): 3, ("b", 0): 1}, parts, name="s")


def test_make_ranges_resolves_keywords_against_log_bounds():
    bounds = {("a", 0): (0, 10), ("a", 1): (5, 8), ("b", 0): (0, 0)}
    starts = {("a", 0): EARLIEST, ("a", 1): 6, ("b", 0): EARLIEST}
    ends = {("a", 0): 4, ("a", 1): LATEST, ("b", 0): LATEST}
    assert make_ranges(starts, ends, bounds) == [
        OffsetRange("a", 0, 0, 4),
        OffsetRange("a", 1, 6, 8),
        OffsetRange("b", 0, 0, 0),
    ]


def test_make_ranges_reports_data_loss_or_clips_when_tolerated():
    bounds = {("a", 0): (5, 10)}
    with pytest.raises(DataLossError, match=r"a-0: range \[2, 7\) is not within the log \[5, 10\)"):
        make_ranges({("a", 0): 2}, {("a", 0): 7}, bounds)
    with pytest.raises(DataLossError, match=r"range \[6, 12\)"):
        make_ranges({("a", 0): 6}, {("a", 0): 12}, bounds)
    assert make_ranges({("a", 0): 2}, {("a", 0): 12}, bounds, fail_on_data_loss=False) == [
        OffsetRange("a", 0, 5, 10)
    ]
    assert make_ranges({("a", 0): 12}, {("a", 0): 14}, bounds, fail_on_data_loss=False) == [
        OffsetRange("a", 0, 10, 10)
    ]
    with pytest.raises(ValueError, match="starting offset 7 is after ending offset 6"):
        make_ranges({("a", 0): 7}, {("a", 0): 6}, bounds)
    try:
        make_ranges({("a", 0): 0}, {("a", 0): 7}, bounds)
    except DataLossError as exc:
        assert exc.args[0].name() == "OFFSET_OUT_OF_RANGE"


def _covers(pieces, ranges):
    """Pieces tile each range exactly, in order, without overlap."""
    by_tp = {}
    for p in pieces:
        by_tp.setdefault((p.topic, p.partition), []).append(p)
    for r in ranges:
        got = by_tp.get((r.topic, r.partition), [])
        if r.size == 0:
            assert got == []
            continue
        assert got[0].start == r.start and got[-1].end == r.end
        for a, b in zip(got, got[1:], strict=False):
            assert a.end == b.start
        assert all(p.size > 0 for p in got)


def test_split_without_min_partitions_keeps_non_empty_ranges():
    ranges = [OffsetRange("a", 0, 0, 10), OffsetRange("a", 1, 3, 3), OffsetRange("a", 2, 0, 1)]
    assert split_ranges(ranges, None) == [ranges[0], ranges[2]]
    assert split_ranges(ranges, 2) == [ranges[0], ranges[2]]


def test_split_proportionally_to_at_least_min_partitions():
    ranges = [OffsetRange("a", 0, 0, 90), OffsetRange("a", 1, 100, 110)]
    pieces = split_ranges(ranges, 10)
    assert len(pieces) == 10
    assert sum(p.partition == 0 for p in pieces) == 9
    assert [p for p in pieces if p.partition == 1] == [OffsetRange("a", 1, 100, 110)]
    assert [p.size for p in pieces if p.partition == 0] == [10] * 9
    _covers(pieces, ranges)


def test_split_uneven_sizes_spread_remainders():
    ranges = [OffsetRange("a", 0, 0, 7), OffsetRange("b", 0, 0, 2), OffsetRange("c", 0, 0, 1)]
    pieces = split_ranges(ranges, 5)
    assert len(pieces) == 5
    assert [(p.topic, p.start, p.end) for p in pieces] == [
        ("a", 0, 3), ("a", 3, 5), ("a", 5, 7), ("b", 0, 2), ("c", 0, 1)]
    _covers(pieces, ranges)
    # never more pieces than records
    pieces = split_ranges(ranges, 50)
    assert len(pieces) == 10 and all(p.size == 1 for p in pieces)
    _covers(pieces, ranges)


@pytest.mark.parametrize("sizes, k", [([1000, 1, 1], 4), ([5, 5, 5], 7), ([3], 3), ([100], 7),
                                      ([2, 9, 0, 4], 6)])
def test_split_counts(sizes, k):
    ranges = [OffsetRange("t", i, 10, 10 + s) for i, s in enumerate(sizes)]
    pieces = split_ranges(ranges, k)
    nonempty = sum(1 for s in sizes if s)
    assert len(pieces) == min(max(k, nonempty), sum(sizes))
    _covers(pieces, ranges)


def test_split_rejects_nonpositive_min_partitions():
    with pytest.raises(ValueError, match="min_partitions must be >= 1"):
        split_ranges([OffsetRange("a", 0, 0, 5), OffsetRange("a", 1, 0, 5)], 0)


def test_spark_ranges_are_spark_kafka_source_tasks():
    # values from Spark's KafkaOffsetRangeCalculatorSuite
    ranges = [OffsetRange("t1", 1, 1, 5), OffsetRange("t2", 1, 1, 5)]
    assert spark_ranges(ranges, 2) == ranges  # already as many as asked: unchanged
    assert len(spark_ranges(ranges, 3)) == 4  # round(4 / 8 * 3) = 2 pieces each
    one = [OffsetRange("t1", 1, 1, 5)]
    assert spark_ranges(one, 3) == [OffsetRange("t1", 1, 1, 2), OffsetRange("t1", 1, 2, 3),
                                    OffsetRange("t1", 1, 3, 5)]
    uneven = [OffsetRange("t1", 1, 1, 5), OffsetRange("t2", 1, 1, 21)]
    # the small range stays whole; the rest is shared among the ranges that get split
    assert spark_ranges(uneven, 4) == [OffsetRange("t1", 1, 1, 5), OffsetRange("t2", 1, 1, 7),
                                       OffsetRange("t2", 1, 7, 14),
                                       OffsetRange("t2", 1, 14, 21)]
    three = [OffsetRange("t", p, 0, 20) for p in range(3)]
    assert [len([r for r in spark_ranges(three, 7) if r.partition == p]) for p in range(3)
            ] == [2, 2, 2]  # round(20 / 60 * 7) each
    assert spark_ranges([OffsetRange("t", 0, 0, 0)], 4) == []
    assert spark_ranges([OffsetRange("t", 0, 0, 20)], None, 6) == [
        OffsetRange("t", 0, 0, 5), OffsetRange("t", 0, 5, 10), OffsetRange("t", 0, 10, 15),
        OffsetRange("t", 0, 15, 20)]


def test_pack_ranges_keeps_ranges_whole_and_in_order():
    a, b, c, d = (OffsetRange("t", 0, 0, 50), OffsetRange("t", 1, 0, 10),
                  OffsetRange("t", 2, 0, 30), OffsetRange("u", 0, 5, 25))
    # largest first to the emptiest task: a -> 0, c -> 1, d -> 1 (30 < 50), b -> 0 (50 = 50)
    assert pack_ranges([a, b, c, d], 2) == [(a, b), (c, d)]
    assert pack_ranges([a, b, c, d], 1) == [(a, b, c, d)]
    assert pack_ranges([a, b, c, d], 9) == [(a,), (b,), (c,), (d,)]
    assert pack_ranges([], 3) == []
    with pytest.raises(ValueError, match="tasks must be >= 1"):
        pack_ranges([a], 0)
