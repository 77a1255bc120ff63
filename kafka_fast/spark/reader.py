"""Batch reads of Kafka topics into Spark DataFrames.

The driver resolves the offset specs into per-partition ranges (``offsets``), splits them
into Spark tasks, and each task reads exactly its range with ``assign`` at the range start
(no consumer group, nothing committed), turning ``consume_batch`` views into Arrow batches
that ``mapInArrow`` hands to the JVM without a Python object per record.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..topic_partition import TopicPartition

if TYPE_CHECKING:
    from ..consumer import Consumer
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
#: Consumer settings of range reads unless the configuration sets them: fetches of up to
#: 8 MiB per partition (the consumer's default is 1 MiB), so that one ``consume_batch``
#: call, and so one Arrow batch handed to Spark, holds tens of thousands of records rather
#: than a few thousand (each batch costs Spark and Python a fixed amount on top of its rows);
#: and a broker wait of 10 ms for a fetch that finds nothing (500 ms by default): a range ends
#: at records already in the log, so only the fetch past a range's end waits, and a task's next
#: range (the next micro-batch's, on a cached consumer) cannot start until it comes back
RANGE_READ_DEFAULTS = {"max.partition.fetch.bytes": 8 << 20, "fetch.wait.max.ms": 10}
#: Java ``TimestampType.id`` by ``kafka_fast.message`` timestamp type (none, create, log append).
_SPARK_TIMESTAMP_TYPES = (-1, 0, 1)


def reader_config(conf: Mapping[str, Any], *, fail_on_data_loss: bool = True,
                  group_prefix: str | None = None) -> dict[str, Any]:
    """Consumer settings for range reads: never commit, never store offsets, and report an
    out-of-range start (deleted records) as an error unless data loss is tolerated.
    Without a ``group.id`` the consumer is named ``<group_prefix>-<random>`` (as Spark's
    ``groupIdPrefix``; default ``kafka-fast-range-reader``)."""
    out = {**RANGE_READ_DEFAULTS, **conf}
    # A consumer needs a group id; range reads never join the group nor commit to it.
    out.setdefault("group.id",
                   f"{group_prefix or 'kafka-fast-range-reader'}-{uuid.uuid4().hex[:12]}")
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
    # the end of each partition is found by reading until an empty fetch reports it: do
    # not let the broker hold that fetch for fetch.wait.max.ms
    probe_conf = {**reader_config(conf), "enable.partition.eof": True, "fetch.wait.max.ms": 10}
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
                 fail_on_data_loss: bool = True, poll_timeout_ms: int = 120_000,
                 group_prefix: str | None = None) -> None:
        self.conf = reader_config(conf, fail_on_data_loss=fail_on_data_loss,
                                  group_prefix=group_prefix)
        # a worker's consumer serves every read of the same settings: a group id made up
        # here (a read never joins the group nor commits to it) is not one of them, so the
        # reads of later queries do not start a consumer each
        self.cache_conf = (self.conf if "group.id" in conf else
                           {k: v for k, v in self.conf.items() if k != "group.id"})
        self.include_headers = include_headers
        self.fail_on_data_loss = fail_on_data_loss
        self.poll_timeout = poll_timeout_ms / 1000.0

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        ranges = (OffsetRange(row["topic"], row["partition"], row["start"], row["end"])
                  for batch in batches for row in batch.to_pylist())
        yield from self.read_ranges(ranges)

    def read_ranges(self, ranges: Iterable[OffsetRange]) -> Iterator[Any]:
        """Arrow batches of every range, read with this worker's cached consumer (dropped
        from the cache if reading fails). Ranges of distinct partitions are read together
        (``together``)."""
        from ..consumer import Consumer

        group_id = self.conf["group.id"]
        consumer = clients.cached(ROLE, self.cache_conf,
                                  lambda conf: Consumer({**conf, "group.id": group_id}))
        try:
            for group in together(ranges):
                yield from self.read(consumer, group)
        except BaseException:
            clients.discard(ROLE, self.cache_conf)
            raise

    def read(self, consumer: Consumer, ranges: OffsetRange | Sequence[OffsetRange]
             ) -> Iterator[Any]:
        """Arrow batches of exactly the records ``r.start <= offset < r.end`` of each range
        (of distinct partitions), all assigned at once: the fetches of every partition are
        in flight together and a batch may hold records of several ranges. A partition is
        paused once its range is read, so nothing past its end is fetched again."""
        import numpy as np

        group = [ranges] if isinstance(ranges, OffsetRange) else list(ranges)
        group = [r for r in group if r.size > 0]
        if not group:
            return
        if len({(r.topic, r.partition) for r in group}) != len(group):
            raise ValueError(f"ranges read together must be of distinct partitions: {group}")
        index = {(r.topic, r.partition): i for i, r in enumerate(group)}
        ends = np.asarray([r.end for r in group], np.int64)
        nexts = np.asarray([r.start for r in group], np.int64)
        # nothing past a range's end is fetched (a micro-batch's ranges are small next to
        # the 8 MiB a partition's Fetch may bring)
        consumer.fetch_until([TopicPartition(r.topic, r.partition, r.end) for r in group])
        consumer.assign([TopicPartition(r.topic, r.partition, r.start) for r in group])
        try:
            deadline = time.monotonic() + self.poll_timeout
            pending = set(range(len(group)))
            while pending:
                left = int(sum(ends[i] - nexts[i] for i in pending))
                view = consumer.consume_batch(max_records=max(1, min(BATCH_RECORDS, left)),
                                              timeout=1.0, headers=self.include_headers)
                if len(view):
                    ids = _range_ids(view, index)
                    offsets = np.asarray(view.offsets)
                    keep = (ids >= 0) & (offsets >= nexts[ids]) & (offsets < ends[ids])
                    for lo, hi in _runs(keep):
                        yield from spark_arrow(view, lo, hi, include_headers=self.include_headers)
                    ours = ids >= 0  # each range moves past the last of its records seen
                    np.maximum.at(nexts, ids[ours], offsets[ours] + 1)
                    deadline = time.monotonic() + self.poll_timeout
                else:
                    # nothing returned: a range may end in records the log skips (control
                    # records of transactions, compacted records): the position says so
                    waiting = [group[i] for i in sorted(pending)]
                    positions = consumer.position(
                        [TopicPartition(r.topic, r.partition) for r in waiting])
                    for r, tp in zip(waiting, positions, strict=True):
                        i = index[(r.topic, r.partition)]
                        nexts[i] = max(nexts[i], tp.offset)
                if self._finish(consumer, group, pending, nexts, ends) or len(view):
                    continue
                if time.monotonic() > deadline:
                    if self.fail_on_data_loss:
                        r = group[min(pending)]
                        raise DataLossError(
                            f"{r.topic}-{r.partition}: no record at offsets "
                            f"[{int(nexts[min(pending)])}, {r.end}) after "
                            f"{self.poll_timeout:g} s")
                    break
        finally:
            consumer.unassign()
            consumer.fetch_until([TopicPartition(r.topic, r.partition, -1) for r in group])

    @staticmethod
    def _finish(consumer: Consumer, group: list[OffsetRange], pending: set[int],
                nexts: Any, ends: Any) -> bool:
        """Drop the ranges read to their end from ``pending`` and pause their partitions;
        True when some were."""
        done = [i for i in pending if nexts[i] >= ends[i]]
        if not done:
            return False
        pending.difference_update(done)
        if pending:
            consumer.pause([TopicPartition(group[i].topic, group[i].partition) for i in done])
        return True


def together(ranges: Iterable[OffsetRange]) -> Iterator[list[OffsetRange]]:
    """``ranges`` in their order, cut into groups of distinct partitions (a partition seen
    again starts the next group), each read with one assignment."""
    group: list[OffsetRange] = []
    seen: set[tuple[str, int]] = set()
    for r in ranges:
        if (r.topic, r.partition) in seen:
            yield group
            group, seen = [], set()
        group.append(r)
        seen.add((r.topic, r.partition))
    if group:
        yield group


def _range_ids(view: Any, index: Mapping[tuple[str, int], int]) -> Any:
    """The range (its position in ``index``) of each record of ``view``; -1 for a
    partition outside them."""
    import numpy as np

    parts = np.asarray(view.partitions)
    width = max(max(p for _, p in index), int(parts.max())) + 1
    table = np.full((len(view.topics), width), -1, np.int64)
    for t, name in enumerate(view.topics):
        for (topic, p), i in index.items():
            if topic == name:
                table[t, p] = i
    return table[np.asarray(view.topic_index), parts]


def _runs(keep: Any) -> list[tuple[int, int]]:
    """``(lo, hi)`` of each run of True in the boolean array ``keep``."""
    import numpy as np

    if keep.all():
        return [(0, len(keep))]
    edges = np.flatnonzero(np.diff(np.concatenate(([False], keep, [False])).astype(np.int8)))
    return [(int(lo), int(hi)) for lo, hi in zip(edges[::2], edges[1::2], strict=True)]


def arrow_schema(include_headers: bool = False) -> Any:
    """The Arrow schema Spark expects for ``KAFKA_SCHEMA`` (what ``to_arrow_schema`` gives)."""
    import pyarrow as pa

    fields = [
        pa.field("key", pa.binary()), pa.field("value", pa.binary()),
        pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()), pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", pa.list_(pa.field("element", pa.struct(
            [pa.field("key", pa.string()), pa.field("value", pa.binary())])))))
    return pa.schema(fields)


def spark_arrow(view: Any, lo: int, hi: int, *, include_headers: bool = False) -> list[Any]:
    """Records ``lo:hi`` of a ``RecordBatchView`` as one Arrow batch in exactly the Arrow
    schema Spark expects for the Kafka source schema (``arrow_schema``).

    Built straight from the view's columns: keys and values share the view's data buffers
    (only their offsets become the 32-bit ones of Arrow ``binary``), partitions and offsets
    are the view's arrays; the topic becomes a plain string column, timestamps microseconds
    in UTC, and timestamp types Java's ids (0 create time, 1 log-append time, -1 none). No
    Python object per record.
    """
    import numpy as np
    import pyarrow as pa

    from ..records.arrow import numeric

    n = hi - lo
    if n <= 0:
        return []
    schema = arrow_schema(include_headers)
    kinds = np.asarray(_SPARK_TIMESTAMP_TYPES, dtype=np.int32)
    arrays = [
        _binary(view.keys, lo, hi),
        _binary(view.values, lo, hi),
        _topics(view, lo, hi),
        numeric(np.asarray(view.partitions[lo:hi], np.int32), pa.int32()),
        numeric(np.asarray(view.offsets[lo:hi], np.int64), pa.int64()),
        numeric(np.asarray(view.timestamps[lo:hi], np.int64) * 1000,
                pa.timestamp("us", tz="UTC")),
        numeric(kinds[view.timestamp_types[lo:hi].astype(np.intp)], pa.int32()),
    ]
    if include_headers:
        arrays.append(view.to_arrow().column("headers").slice(lo, n).combine_chunks()
                      .cast(schema.field("headers").type))
    return [pa.RecordBatch.from_arrays(arrays, schema=schema)]


#: Arrow ``binary`` offsets are 32-bit: a slice of more data than this is cast from
#: ``large_binary`` instead (Arrow then fails clearly if it cannot be held)
_MAX_BINARY = (1 << 31) - 1


def _binary(col: Any, lo: int, hi: int) -> Any:
    """Records ``lo:hi`` of a packed column (``data``, ``offsets`` int64 N+1, ``nulls``) as
    an Arrow ``binary`` array over the same data buffer."""
    import numpy as np
    import pyarrow as pa

    n = hi - lo
    offsets = col.offsets[lo:hi + 1]
    nulls = None if col.nulls is None else col.nulls[lo:hi]
    validity, null_count = None, 0
    if nulls is not None and nulls.any():
        null_count = int(nulls.sum())
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    if int(offsets[-1]) > _MAX_BINARY:
        wide = pa.Array.from_buffers(pa.large_binary(), n,
                                     [validity, pa.py_buffer(offsets), pa.py_buffer(col.data)],
                                     null_count=null_count)
        return wide.cast(pa.binary())
    return pa.Array.from_buffers(
        pa.binary(), n,
        [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(col.data)],
        null_count=null_count)


def _topics(view: Any, lo: int, hi: int) -> Any:
    """The topic of records ``lo:hi`` as an Arrow ``string`` array."""
    import numpy as np
    import pyarrow as pa

    from ..records.arrow import numeric, strings

    n = hi - lo
    if len(view.topics) == 1:
        name = view.topics[0].encode()
        offsets = np.arange(n + 1, dtype=np.int32) * len(name)
        return pa.Array.from_buffers(pa.string(), n,
                                     [None, pa.py_buffer(offsets), pa.py_buffer(name * n)])
    return strings(view.topics).take(
        numeric(np.asarray(view.topic_index[lo:hi], np.int32), pa.int32()))
