"""Parsing of the data source's options (pure functions: no Spark, no broker)."""

from __future__ import annotations

import pytest

from kafka_fast.spark.reader import reader_config
from kafka_fast.spark.source import duration_ms, java_pattern, parse_source_options, rate_limit

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def parse(streaming: bool = False, **options):
    return parse_source_options({**BASE, **options}, streaming=streaming)


def test_durations_are_spark_time_strings():
    assert duration_ms("15m", "maxTriggerDelay") == 900_000
    assert duration_ms("500", "maxTriggerDelay") == 500  # a bare number is milliseconds
    assert duration_ms("3 s", "maxTriggerDelay") == 3000
    assert duration_ms("2h", "maxTriggerDelay") == 7_200_000
    with pytest.raises(ValueError, match="option 'maxTriggerDelay' must be a duration"):
        duration_ms("3 weeks", "maxTriggerDelay")
    assert parse(True, subscribe="t").max_trigger_delay_ms == 900_000


def test_java_patterns_are_searched_for():
    assert java_pattern("t-[ab]").search("t-ab")
    assert java_pattern(r"(?<name>t)-\d+\z").search("x-t-12")
    assert not java_pattern(r"(?<name>t)-\d+\z").search("t-12x")
    with pytest.raises(ValueError, match="subscribePattern"):
        java_pattern(r"\p{Lu}")


@pytest.mark.parametrize(("options", "named"), [
    ({"assign": '{"t": [true]}'}, "assign"),
    ({"assign": '{"t": [1.0]}'}, "assign"),
    ({"subscribe": "t", "startingOffsetsByTimestampStrategy": "earliest"},
     "startingOffsetsByTimestampStrategy"),
    ({"subscribe": "t", "startingTimestamp": "soon"}, "startingTimestamp"),
    ({"subscribe": "t", "endingOffsetsByTimestamp": '{"t": {"0": "x"}}'},
     "endingOffsetsByTimestamp"),
    ({"subscribe": "t", "minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"},
     "minOffsetsPerTrigger"),
    ({"subscribe": "t", "fetchOffset.numRetries": "-1"}, "fetchOffset.numRetries"),
    ({"subscribe": "t", "maxRecordsPerPartition": "0"}, "maxRecordsPerPartition"),
    ({"subscribe": "t", "groupIdPrefix": " "}, "groupIdPrefix"),
    ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "auto.offset.reset"),
    ({"subscribe": "t", "somethingElse": "1"}, "somethingelse"),
])
def test_bad_options_are_named(options, named):
    with pytest.raises(ValueError, match=named):
        parse(**options)


def test_ending_options_are_refused_in_streams():
    for option in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        with pytest.raises(ValueError, match="not valid in streaming"):
            parse(True, subscribe="t", **{option: '{"t": {"0": 1}}'})


def test_parsed_values():
    opts = parse(subscribe="t", startingTimestamp="5", endingOffsetsByTimestamp='{"t": {"1": 9}}',
                 startingOffsetsByTimestampStrategy="LATEST", groupIdPrefix="job",
                 **{"fetchOffset.numRetries": "0", "fetchOffset.retryIntervalMs": "20"})
    assert (opts.starting_timestamp, opts.ending_by_timestamp) == (5, {("t", 1): 9})
    assert opts.timestamp_strategy == "latest"
    assert (opts.fetch_attempts, opts.fetch_retry_interval_ms) == (1, 20)
    assert reader_config(opts.conf, group_prefix=opts.group_id_prefix)["group.id"].startswith(
        "job-")
    assert reader_config({"group.id": "mine"}, group_prefix="job")["group.id"] == "mine"


def test_range_reads_fetch_8_mib_per_partition_and_wait_10_ms_unless_set():
    assert reader_config({})["max.partition.fetch.bytes"] == 8 << 20
    assert reader_config({"max.partition.fetch.bytes": 4096})["max.partition.fetch.bytes"] == 4096
    assert reader_config({})["fetch.wait.max.ms"] == 10
    assert reader_config({"fetch.wait.max.ms": 250})["fetch.wait.max.ms"] == 250
    # the options of format("kafka_fast") reach it as the configuration
    opts = parse(subscribe="t", **{"kafka.max.partition.fetch.bytes": "65536",
                                   "kafka.fetch.wait.max.ms": "40"})
    assert int(reader_config(opts.conf)["max.partition.fetch.bytes"]) == 65536
    assert int(reader_config(opts.conf)["fetch.wait.max.ms"]) == 40


def test_rate_limit_shares_as_spark():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    end = {("t", 0): 20, ("t", 1): 20, ("t", 2): 20}
    assert rate_limit(start, end, 25) == dict.fromkeys(end, 8)  # floor(25 / 3)
    # a partition whose share is below 1 still gets one record
    assert rate_limit({("a", 0): 0, ("b", 0): 0}, {("a", 0): 1000, ("b", 0): 1}, 10) == {
        ("a", 0): 9, ("b", 0): 1}
    assert rate_limit(start, end, 100) == end
