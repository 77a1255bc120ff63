"""Batch reads of Kafka topics into Spark DataFrames.

The driver resolves the offset specs into per-partition ranges (``offsets``), splits them
into Spark tasks, and each task reads exactly its range with ``assign`` at the range start
(no consumer group, nothing committed), turning ``consume_batch`` views into Arrow batches
that ``mapInArrow`` hands to the JVM without a Python object per record.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..topic_partition import TopicPartition
from . import clients
from .offsets import (
    DataLossError,
    OffsetRange,
    check_specs,
    log_bounds,
    make_ranges,
    parse_offsets,
    spec_for,
    split_ranges,
    topic_partitions,
)

ROLE = "consumer"
#: Spark's Kafka source schema (``headers`` only with ``include_headers=True``).
KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
HEADERS_FIELD = "headers array<struct<key:string,value:binary>>"
RANGE_SCHEMA = "topic string, partition int, start long, end long"
#: Records asked of one ``consume_batch`` call.
BATCH_RECORDS = 100_000
#: Kafka message timestamp types (``kafka_fast.message``) -> Java ``TimestampType.id``.
_SPARK_TIMESTAMP_TYPE = {0: -1, 1: 0, 2: 1}


def reader_config(conf: Mapping[str, Any], *, fail_on_data_loss: bool = True) -> dict[str, Any]:
    """Consumer settings for range reads: never commit, never store offsets, and report an
    out-of-range start (deleted records) as an error unless data loss is tolerated."""
    out = dict(conf)
    out.setdefault("group.id", "kafka-fast-spark-reader")
    out.update({
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
    })
    return out


def offset_ranges(
    conf: Mapping[str, Any],
    topics: str | Sequence[str],
    starting_offsets: Any = "earliest",
    ending_offsets: Any = "latest",
    *,
    fail_on_data_loss: bool = True,
    timeout: float = 30.0,
) -> list[OffsetRange]:
    """Resolve offset specs into one ``OffsetRange`` per partition (runs on the driver).

    "latest" ends are found by reading (``offsets.log_bounds``), so they are the offset after
    the last record even on brokers whose reported high watermark lags the last batch.
    """
    from ..consumer import Consumer

    topics = [topics] if isinstance(topics, str) else list(topics)
    if not topics or not all(isinstance(t, str) and t for t in topics):
        raise ValueError(f"topic_or_topics must name at least one topic, got {topics!r}")
    start = parse_offsets(starting_offsets, name="starting_offsets")
    end = parse_offsets(ending_offsets, name="ending_offsets")
    check_specs(start, end)
    probe_conf = reader_config(conf)
    probe_conf["enable.partition.eof"] = True
    consumer = Consumer(probe_conf)
    try:
        parts = topic_partitions(consumer, topics, timeout)
        starts = spec_for(start, parts, name="starting_offsets")
        ends = spec_for(end, parts, name="ending_offsets")
        # every range is checked against the true log end, so it is read for all partitions
        bounds = log_bounds(consumer, parts, timeout, exact_end=True)
    finally:
        consumer.close()
    return make_ranges(starts, ends, bounds, fail_on_data_loss=fail_on_data_loss)


def read_kafka(
    spark: Any,
    conf: Mapping[str, Any],
    topic_or_topics: str | Sequence[str],
    starting_offsets: Any = "earliest",
    ending_offsets: Any = "latest",
    min_partitions: int | None = None,
    include_headers: bool = False,
    fail_on_data_loss: bool = True,
    *,
    poll_timeout_ms: int = 120_000,
) -> Any:
    """A DataFrame of the records in the resolved ranges, with Spark's Kafka source schema.

    ``starting_offsets``/``ending_offsets``: "earliest", "latest", or a JSON string / dict
    ``{"topic": {"0": 23, "1": -2}}`` (-2 earliest, -1 latest) naming every partition.
    Ranges are split into at least ``min_partitions`` Spark partitions. A range whose records
    were deleted raises ``DataLossError`` unless ``fail_on_data_loss`` is False. A task that
    gets no record for ``poll_timeout_ms`` while records of its range are missing fails.
    """
    ranges = offset_ranges(conf, topic_or_topics, starting_offsets, ending_offsets,
                           fail_on_data_loss=fail_on_data_loss)
    return ranges_to_dataframe(spark, conf, split_ranges(ranges, min_partitions),
                               include_headers=include_headers,
                               fail_on_data_loss=fail_on_data_loss,
                               poll_timeout_ms=poll_timeout_ms)


def ranges_to_dataframe(
    spark: Any,
    conf: Mapping[str, Any],
    ranges: Sequence[OffsetRange],
    *,
    include_headers: bool = False,
    fail_on_data_loss: bool = True,
    poll_timeout_ms: int = 120_000,
) -> Any:
    """One Spark partition per range, each read by a ``RangeReader`` task."""
    rows = [(r.topic, r.partition, r.start, r.end) for r in ranges]
    rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    tasks = spark.createDataFrame(rdd, RANGE_SCHEMA)
    schema = f"{KAFKA_SCHEMA}, {HEADERS_FIELD}" if include_headers else KAFKA_SCHEMA
    reader = RangeReader(conf, include_headers=include_headers,
                         fail_on_data_loss=fail_on_data_loss, poll_timeout_ms=poll_timeout_ms)
    return tasks.mapInArrow(reader, schema)


class RangeReader:
    """``f(range_batches)`` for ``mapInArrow``: reads every range row into Kafka-schema batches."""

    def __init__(self, conf: Mapping[str, Any], *, include_headers: bool = False,
                 fail_on_data_loss: bool = True, poll_timeout_ms: int = 120_000) -> None:
        self.conf = reader_config(conf, fail_on_data_loss=fail_on_data_loss)
        self.include_headers = include_headers
        self.fail_on_data_loss = fail_on_data_loss
        self.poll_timeout = poll_timeout_ms / 1000.0

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        from ..consumer import Consumer

        consumer = clients.cached(ROLE, self.conf, Consumer)
        try:
            for batch in batches:
                for row in batch.to_pylist():
                    r = OffsetRange(row["topic"], row["partition"], row["start"], row["end"])
                    yield from self.read(consumer, r)
        except BaseException:
            clients.discard(ROLE, self.conf)
            raise

    def read(self, consumer: Any, r: OffsetRange) -> Iterator[Any]:
        """Arrow batches of exactly the records ``r.start <= offset < r.end``."""
        import numpy as np

        if r.size <= 0:
            return
        tp = TopicPartition(r.topic, r.partition, r.start)
        consumer.assign([tp])
        try:
            next_offset = r.start
            deadline = time.monotonic() + self.poll_timeout
            while next_offset < r.end:
                view = consumer.consume_batch(max_records=min(BATCH_RECORDS, r.end - next_offset),
                                              timeout=1.0)
                n = len(view)
                if n:
                    offsets = np.asarray(view.offsets)
                    lo = int(np.searchsorted(offsets, next_offset))
                    hi = int(np.searchsorted(offsets, r.end))
                    if hi > lo:
                        yield spark_arrow(view, r.topic, r.partition, lo, hi,
                                          include_headers=self.include_headers)
                    next_offset = max(next_offset, int(offsets[-1]) + 1)
                    deadline = time.monotonic() + self.poll_timeout
                    continue
                # nothing returned: the range may end in records the log skips (control
                # records of transactions, compacted records): the position says so
                position = consumer.position([TopicPartition(r.topic, r.partition)])[0].offset
                if position >= r.end:
                    break
                if time.monotonic() > deadline:
                    if self.fail_on_data_loss:
                        raise DataLossError(
                            f"{r.topic}-{r.partition}: no record at offsets [{next_offset}, "
                            f"{r.end}) after {self.poll_timeout:g} s (position {position})"
                        )
                    break
        finally:
            consumer.unassign()


def spark_arrow(view: Any, topic: str, partition: int, lo: int, hi: int, *,
                include_headers: bool = False) -> Any:
    """Records ``lo:hi`` of a ``RecordBatchView`` as an Arrow batch in the Kafka source schema."""
    import numpy as np
    import pyarrow as pa

    n = hi - lo
    tb = topic.encode("utf-8")
    topic_arr = pa.Array.from_buffers(
        pa.string(), n,
        [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * len(tb)), pa.py_buffer(tb * n)],
    )
    ts_us = np.asarray(view.timestamps[lo:hi], dtype=np.int64) * 1000
    arrays = [
        _binary(view.keys, getattr(view, "key_nulls", None), lo, hi),
        _binary(view.values, getattr(view, "value_nulls", None), lo, hi),
        topic_arr,
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(np.asarray(view.offsets[lo:hi], dtype=np.int64)),
        pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), n, [None, pa.py_buffer(ts_us)]),
        pa.array(_timestamp_types(view, lo, hi)),
    ]
    names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    if include_headers:
        arrays.append(_headers(view, lo, hi))
        names.append("headers")
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _binary(column: Any, nulls: Any, lo: int, hi: int) -> Any:
    """Packed ``(data, offsets)`` records ``lo:hi`` as an Arrow large_binary array, no copy of
    the data."""
    import numpy as np
    import pyarrow as pa

    data, offsets = column[0], np.asarray(column[1], dtype=np.int64)
    n = hi - lo
    validity = None
    if nulls is not None:
        valid = ~np.asarray(nulls[lo:hi], dtype=bool)
        if not valid.all():
            validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.large_binary(), n,
        [validity, pa.py_buffer(np.ascontiguousarray(offsets[lo:hi + 1])), pa.py_buffer(data)],
    )


def _timestamp_types(view: Any, lo: int, hi: int) -> Any:
    import numpy as np

    types = getattr(view, "timestamp_types", None)
    if types is None:
        kind = getattr(view, "timestamp_type", 1)
        return np.full(hi - lo, _SPARK_TIMESTAMP_TYPE.get(int(kind), -1), dtype=np.int32)
    lookup = np.array([-1, 0, 1], dtype=np.int32)
    return lookup[np.asarray(types[lo:hi], dtype=np.int64)]


def _headers(view: Any, lo: int, hi: int) -> Any:
    import pyarrow as pa

    rows = view.headers[lo:hi] if view.headers is not None else [None] * (hi - lo)
    typ = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    return pa.array([None if not h else [{"key": k, "value": v} for k, v in h] for h in rows],
                    type=typ)
