"""The ``kafka_fast`` data source on PySpark's Python Data Source API.

``register(spark)`` makes ``spark.read`` / ``readStream`` / ``write`` / ``writeStream``
``.format("kafka_fast")`` available. Reads yield Arrow batches built from
``Consumer.consume_batch`` (``reader.RangeReader``, the code ``read_kafka`` uses); writes
receive Arrow batches (``DataSourceArrowWriter``) for ``Producer.produce_batch``
(``writer.send_arrow_batches``, the code ``write_kafka`` uses).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .offsets import OffsetRange, pack_ranges, spark_ranges
from .reader import RangeReader
from .sink import (
    SinkOptions,
    check_sink_schema,
    end_prepared,
    parse_sink_options,
    write_partition,
    write_partition_once,
)
from .source import (
    TP,
    Resolver,
    SourceOptions,
    from_json_offsets,
    parse_source_options,
    rate_limit,
    to_json_offsets,
)

NAME = "kafka_fast"
#: Local property Spark's micro-batch execution sets on every task of a batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"


def kafka_schema(include_headers: bool = False) -> StructType:
    """Spark's Kafka source schema (``headers`` only with ``includeHeaders=true``)."""
    fields = [
        StructField("key", BinaryType()), StructField("value", BinaryType()),
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("offset", LongType()), StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(StructType([
            StructField("key", StringType()), StructField("value", BinaryType())]))))
    return StructType(fields)


@dataclass(frozen=True)
class RangesPartition(InputPartition):
    """One Spark task: offset ranges read one after another."""

    ranges: tuple[OffsetRange, ...]


@dataclass
class SinkCommit(WriterCommitMessage):
    """What one write task did."""

    partition: int
    records: int
    prepared: Any = None  # exactlyOnce: the task's open transaction, for the driver to end


def _partitions(ranges: Sequence[OffsetRange], opts: SourceOptions) -> list[RangesPartition]:
    """The tasks of a read: Spark's source's ranges (``minPartitions``,
    ``maxRecordsPerPartition``), then, unless a range was split, whole ranges packed into at
    most ``max(packPartitions, minPartitions)`` tasks: each task costs PySpark a fixed
    amount, so fewer tasks than Kafka partitions cost less per micro-batch."""
    pieces = spark_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)
    whole = len(pieces) == len({(r.topic, r.partition) for r in pieces})
    if opts.max_tasks is not None and whole and opts.max_records_per_partition is None:
        tasks = max(opts.max_tasks, opts.min_partitions or 1)
        return [RangesPartition(group) for group in pack_ranges(pieces, tasks)] or \
            [RangesPartition(())]
    # one empty task when there is nothing to read: Spark plans a read of no partition as
    # one task that gets a plain InputPartition
    return [RangesPartition((r,)) for r in pieces] or [RangesPartition(())]


def _range_reader(opts: SourceOptions) -> RangeReader:
    """Made on the driver: every task of the source then names its consumer alike, so a
    worker's cached consumer serves all of them."""
    return RangeReader(opts.conf, include_headers=opts.include_headers,
                       fail_on_data_loss=opts.fail_on_data_loss,
                       poll_timeout_ms=opts.poll_timeout_ms, group_prefix=opts.group_id_prefix)


def _read(reader: RangeReader, partition: InputPartition) -> Iterator[Any]:
    if not isinstance(partition, RangesPartition):
        raise TypeError(f"kafka_fast: a task got {partition!r}, not its offset ranges")
    return reader.read_ranges(partition.ranges)


def check_user_schema(schema: StructType, options: Mapping[str, str]) -> None:
    """Refuse a schema given with ``.schema(...)`` (Spark's Kafka source has a fixed one)."""
    raw = str({k.lower(): v for k, v in options.items()}.get("includeheaders", "false"))
    if schema != kafka_schema(raw.strip().lower() == "true"):
        raise ValueError("the kafka_fast source has a fixed schema and cannot be set with a "
                         f"custom one (got {schema.simpleString()})")


class KafkaDataSource(DataSource):
    """``format("kafka_fast")``: Spark's Kafka source and sink options and schema."""

    #: the session's parallelism, for ``packPartitions=true`` (set by ``register``; None:
    #: the driver's cores, all the planning process can see)
    parallelism: ClassVar[int | None] = None

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        raw = str(self.options.get("includeHeaders", "false")).strip().lower()
        return kafka_schema(raw == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        check_user_schema(schema, self.options)
        return KafkaBatchReader(parse_source_options(self.options, streaming=False,
                                                    parallelism=self.parallelism))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_user_schema(schema, self.options)
        return KafkaStreamReader(parse_source_options(self.options, streaming=True,
                                                     parallelism=self.parallelism))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:
            raise ValueError("save mode 'overwrite' is not allowed for Kafka: records cannot "
                             "be replaced (use mode('append'))")
        opts = parse_sink_options(self.options, streaming=False)
        check_sink_schema(schema, opts)
        return KafkaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamArrowWriter:
        opts = parse_sink_options(self.options, streaming=True)
        check_sink_schema(schema, opts)
        return KafkaStreamWriter(opts)


class KafkaBatchReader(DataSourceReader):
    """Resolves ``startingOffsets``..``endingOffsets`` on the driver; tasks as ``_partitions``."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.range_reader = _range_reader(opts)

    def partitions(self) -> Sequence[InputPartition]:
        resolver = Resolver(self.opts)
        try:
            ranges = resolver.batch_ranges()
        finally:
            resolver.close()
        return _partitions(ranges, self.opts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.range_reader, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{"topic": {"partition": next offset}}``, as Spark's Kafka source's.

    ``minOffsetsPerTrigger``: a trigger that finds fewer new records than that plans no
    batch, unless ``maxTriggerDelay`` has passed since the last batch was planned (the
    first trigger always plans one), as Spark's source."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.range_reader = _range_reader(opts)
        self._resolver: Resolver | None = None
        self._target: dict[TP, int] | None = None
        self._last_trigger = 0.0
        # what this trigger's ``latestOffset`` looked up: the ends it planned from (what
        # ``reportLatestOffset`` reports, as Spark's source) and the log starts, which the
        # trigger's ``partitions`` then uses instead of asking again
        self._latest: dict[TP, int] | None = None
        self._log_starts: dict[TP, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "range_reader": self.range_reader, "_resolver": None,
                "_target": None, "_last_trigger": 0.0, "_latest": None, "_log_starts": None}

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = Resolver(self.opts)
        return self._resolver

    def _log_ends(self) -> dict[TP, int]:
        parts = self.resolver.partitions()
        bounds = self.resolver.bounds(parts)
        self._log_starts = {tp: low for tp, (low, _) in bounds.items()}
        return {tp: end for tp, (_, end) in bounds.items()}

    def initialOffset(self) -> dict:
        parts = self.resolver.partitions()
        bounds = self.resolver.bounds(parts)
        return to_json_offsets(self.resolver.starts(parts, bounds))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger is not None:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._log_ends()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json_offsets(start)
        ends = self._target if self._target is not None else self._log_ends()
        self._latest = dict(ends)
        # a partition new since ``start`` is read from its log start; none goes backwards
        ends = {tp: max(end, begin.get(tp, 0)) for tp, end in ends.items()}
        for tp, off in begin.items():
            ends.setdefault(tp, off)
        if isinstance(limit, ReadAllAvailable):
            return to_json_offsets(ends)
        if self._delay_batch(begin, ends):
            return to_json_offsets(begin)
        if isinstance(limit, ReadMaxRows):
            new = [tp for tp in ends if tp not in begin]
            lows = self.resolver.bounds(new, exact_end=False) if new else {}
            first = {**{tp: lows[tp][0] for tp in new}, **begin}
            ends = rate_limit(first, ends, limit.max_rows)
        return to_json_offsets(ends)

    def _delay_batch(self, begin: dict[TP, int], ends: dict[TP, int]) -> bool:
        """``minOffsetsPerTrigger``: True to plan no batch now (Spark's ``delayBatch``: new
        records counted from offset 0 for a partition new since ``begin``)."""
        least = self.opts.min_offsets_per_trigger
        if least is None:
            return False
        now = time.monotonic()
        if self._last_trigger and (now - self._last_trigger) * 1000 < \
                self.opts.max_trigger_delay_ms:
            new = sum(end - begin.get(tp, 0) for tp, end in ends.items())
            if new < least:
                return True
        self._last_trigger = now
        return False

    def reportLatestOffset(self) -> dict | None:
        """The ends the last ``latestOffset`` looked up (Spark's source reports those too)."""
        latest = self._latest if self._latest is not None else self._log_ends()
        return to_json_offsets(latest)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        # the log starts of this trigger's ``latestOffset``, used once: a batch planned
        # again after a restart (no ``latestOffset`` before it) looks them up
        starts, self._log_starts = self._log_starts, None
        ranges = self.resolver.stream_ranges(from_json_offsets(start), from_json_offsets(end),
                                             starts)
        return _partitions(ranges, self.opts)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(self.range_reader, partition)

    def commit(self, end: dict) -> None:
        """Nothing to do: the checkpoint holds the offsets; nothing is committed to Kafka."""

    def stop(self) -> None:
        if self._resolver is not None:
            self._resolver.close()
            self._resolver = None


def _task() -> tuple[int, int | None]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return -1, None
    batch = ctx.getLocalProperty(BATCH_ID_PROPERTY)
    return ctx.partitionId(), None if batch is None else int(batch)


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("kafka_fast")``: each task produces and flushes its rows."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        return SinkCommit(_task()[0], write_partition(self.opts, iterator))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("kafka_fast")``: at least once, or with ``exactlyOnce=true``
    one transaction per task and micro-batch (see ``sink``)."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> SinkCommit:
        partition, batch_id = _task()
        if not self.opts.exactly_once:
            return SinkCommit(partition, write_partition(self.opts, iterator))
        if batch_id is None:
            raise RuntimeError(f"exactlyOnce: the task has no {BATCH_ID_PROPERTY} property")
        written, prepared = write_partition_once(self.opts, iterator, batch_id, partition)
        return SinkCommit(partition, written, prepared)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """exactlyOnce: commit every task's prepared transaction (at least once: nothing to do,
        every task flushed its records)."""
        end_prepared(self.opts, _prepared(messages), commit=True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """exactlyOnce: abort the transactions the successful tasks prepared (a failed task's
        is aborted by its own cleanup, or when the re-run fences its transactional id).
        At-least-once writes cannot be undone."""
        end_prepared(self.opts, _prepared(messages), commit=False)


def _prepared(messages: list[WriterCommitMessage | None]) -> list[Any]:
    return [m.prepared for m in messages if isinstance(m, SinkCommit)]


class DefaultSource(KafkaDataSource):
    """The class PySpark's data source lookup finds in ``pyspark_kafka_fast``."""


def session_parallelism(spark: Any) -> int | None:
    """``spark.sparkContext.defaultParallelism`` (``spark.default.parallelism``, else the
    cores of the executors registered now), or None where the session has no SparkContext
    (Spark Connect)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext; any failure: the driver's cores
        return None


def register(spark: Any) -> None:
    """Register ``format("kafka_fast")`` with ``spark`` (a SparkSession); its reads pack
    Kafka partitions into as many tasks as the session's parallelism (``packPartitions``)."""
    parallelism = session_parallelism(spark)
    if parallelism is None:
        spark.dataSource.register(KafkaDataSource)
        return
    # a class of this registration: Spark pickles it by value to its planning processes,
    # with the parallelism they cannot look up
    session_source = type("SessionKafkaDataSource", (KafkaDataSource,),
                          {"parallelism": parallelism, "__module__": __name__,
                           "__doc__": KafkaDataSource.__doc__})
    spark.dataSource.register(session_source)
