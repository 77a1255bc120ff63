"""Writing Spark data to Kafka from executors.

``foreach_partition_writer`` and ``map_partitions_producer`` take the rows Spark hands a
Python function; ``write_kafka`` takes a DataFrame and, by default, moves it through Arrow
(``mapInArrow``) so no Python object is made per row. All of them produce with one
``kafka_fast.Producer`` per executor Python worker (see ``clients``), flush at the end of
every Spark partition, and count delivery failures.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError, KafkaException
from . import clients

# The client and column modules are imported where they are used: the data source's driver
# side (the planner processes Spark forks per job and per micro-batch) imports this module
# and never produces, so it does not pay for loading the client.
if TYPE_CHECKING:
    from ..producer import Producer
    from .columns import Columns, ColumnSpec

log = logging.getLogger("kafka_fast.spark")

ROLE = "producer"
#: Records per ``produce_batch`` call on the row path.
CHUNK_ROWS = 20_000
#: Arrow batches are joined up to this many rows (or ``COALESCE_BYTES``) before one
#: ``produce_batch`` call: Spark hands over 10,000-row batches, and records split four ways
#: make Kafka batches of a few hundred KB, which cost the broker about a third more CPU per
#: record than the 1 MB batches a larger call fills
COALESCE_ROWS = 100_000
COALESCE_BYTES = 16 << 20
#: Only failures reach the delivery callback: successes are counted per batch.
_WRITER_DEFAULTS = {"delivery.report.only.error": True}


class DeliveryError(KafkaException):
    """Records of a Spark partition could not be delivered; carries the first error's code."""

    def __init__(self, topic: str, failed: int, total: int, first: KafkaError | None) -> None:
        code = first.code() if first is not None else KafkaError._FAIL
        name = first.name() if first is not None else "unknown"
        detail = first.str() if first is not None else "no delivery report"
        super().__init__(
            KafkaError.of(
                code,
                f"{failed} of {total} records to topic {topic!r} failed; "
                f"first error {name}: {detail}",
            )
        )
        self.failed = failed
        self.total = total


@dataclass
class Tally:
    """Delivery outcome of one Spark partition: records handed over and failures reported."""

    topic: str
    total: int = 0
    failed: int = 0
    first_error: KafkaError | None = None

    def __call__(self, err: Any, msg: Any) -> None:
        if err:
            self.failed += 1
            if self.first_error is None:
                self.first_error = err

    @property
    def sent(self) -> int:
        return self.total - self.failed

    def refuse(self, count: int, error: KafkaError) -> None:
        """``count`` records the producer would not take, because of ``error``."""
        self.total += count
        self.failed += count
        if self.first_error is None:
            self.first_error = error

    def raise_if_failed(self) -> None:
        if self.failed:
            raise DeliveryError(self.topic, self.failed, self.total, self.first_error)


def producer_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """The producer settings a writer uses: ``conf`` over the writer's defaults."""
    return {**_WRITER_DEFAULTS, **conf}


def producer_for(conf: Mapping[str, Any]) -> Producer:
    """This worker's cached producer for a writer configuration (``producer_config``)."""
    from ..producer import Producer

    return clients.cached(ROLE, conf, Producer)


class Refused(Exception):
    """The producer would not take records (it raised instead of queueing them)."""

    def __init__(self, count: int, error: KafkaError) -> None:
        super().__init__(error)
        self.count = count
        self.error = error


def _refused(count: int, exc: BaseException) -> Refused:
    if isinstance(exc, KafkaException):
        return Refused(count, exc.args[0])
    return Refused(count, KafkaError.of(KafkaError._QUEUE_FULL, str(exc)))


def _produce_batch(producer: Producer, topic: str, tally: Tally, partition: int, values: Any,
                   keys: Any = None, timestamps: Any = None, headers: Any = None) -> None:
    """One ``produce_batch`` call (it waits for queue room itself); raises ``Refused``."""
    from ..producer.contract import record_count

    n = record_count(values)
    try:
        producer.produce_batch(topic, values, keys=keys, partition=partition,
                               timestamps=timestamps, headers=headers, on_delivery=tally)
    except (KafkaException, BufferError) as exc:
        raise _refused(n, exc) from exc
    tally.total += n
    producer.poll(0)


def _produce_one(producer: Producer, topic: str, tally: Tally, value: Any, key: Any,
                 partition: int, timestamp: int, headers: Any) -> None:
    """One ``produce``, serving deliveries while the queue is full; raises ``Refused``."""
    while True:
        try:
            producer.produce(topic, value=value, key=key, partition=partition,
                             on_delivery=tally, timestamp=timestamp, headers=headers)
            break
        except BufferError:
            producer.poll(0.05)
        except KafkaException as exc:
            raise _refused(1, exc) from exc
    tally.total += 1


def _deliver(conf: Mapping[str, Any], topic: str,
             produce_all: Callable[[Any, Tally], None], producer: Any = None) -> Tally:
    """Run ``produce_all(producer, tally)`` with the worker's producer, then flush until
    every record is delivered or failed.

    Records the producer refused count as failed; what the task had queued is then purged
    (reported as failed too) rather than sent, since the task will fail and be retried.
    Any other exception purges as well and propagates. A producer that saw a failure is
    dropped from the cache so the retried task starts with a fresh one. ``producer``: the
    worker's cached producer for ``conf`` when the caller made it (default ``producer_for``).
    """
    producer = producer if producer is not None else producer_for(conf)
    tally = Tally(topic)
    try:
        produce_all(producer, tally)
    except Refused as exc:
        tally.refuse(exc.count, exc.error)
        producer.purge()
    except BaseException:
        _abandon(producer, conf)
        raise
    remaining = producer.flush()
    while remaining:
        remaining = producer.flush(1.0)
    if tally.failed:
        clients.discard(ROLE, conf)
    return tally


def send_rows(rows: Iterable[Any], conf: Mapping[str, Any], topic: str, spec: ColumnSpec,
              use_batch: bool = True) -> Tally:
    """Produce ``rows`` and wait for every delivery report; the tally says what failed."""
    from .columns import chunks

    def produce_all(producer: Producer, tally: Tally) -> None:
        for cols in chunks(rows, spec, CHUNK_ROWS):
            if use_batch:
                for partition, group in cols.by_partition():
                    _produce_batch(producer, topic, tally, partition, group.values,
                                   group.keys, group.timestamps, group.headers)
            else:
                _produce_rows(producer, topic, tally, cols)

    return _deliver(conf, topic, produce_all)


def _produce_rows(producer: Producer, topic: str, tally: Tally, cols: Columns) -> None:
    for i, value in enumerate(cols.values):
        _produce_one(
            producer, topic, tally, value,
            None if cols.keys is None else cols.keys[i],
            -1 if cols.partitions is None else cols.partitions[i],
            0 if cols.timestamps is None else cols.timestamps[i],
            None if cols.headers is None else cols.headers[i],
        )
        if i % 1000 == 0:
            producer.poll(0)


def _abandon(producer: Producer, conf: Mapping[str, Any]) -> None:
    """A task failing mid-way: drop what it queued so the retry does not send it twice."""
    try:
        producer.purge()
    except Exception:  # the cached producer is dropped below either way
        log.warning("purging the producer of a failed task failed; a retry may send its "
                    "records again", exc_info=True)
    clients.discard(ROLE, conf)


class PartitionWriter:
    """``f(rows)`` for ``foreachPartition``: produce, flush, raise ``DeliveryError`` on failure.

    Picklable: holds only the configuration dict, the topic and the column choice.
    """

    def __init__(self, conf: Mapping[str, Any], topic: str, spec: ColumnSpec,
                 use_batch: bool = True) -> None:
        self.conf = producer_config(conf)
        self.topic = topic
        self.spec = spec
        self.use_batch = use_batch

    def __call__(self, rows: Iterable[Any]) -> None:
        send_rows(rows, self.conf, self.topic, self.spec, self.use_batch).raise_if_failed()


class PartitionCounter(PartitionWriter):
    """``f(rows)`` for ``rdd.mapPartitions``: yields ``(partition_index, sent, failed)``."""

    def __init__(self, conf: Mapping[str, Any], topic: str, spec: ColumnSpec,
                 use_batch: bool = True, fail_on_error: bool = False) -> None:
        super().__init__(conf, topic, spec, use_batch)
        self.fail_on_error = fail_on_error

    def __call__(self, rows: Iterable[Any]) -> Iterator[tuple[int, int, int]]:  # type: ignore[override]
        tally = send_rows(rows, self.conf, self.topic, self.spec, self.use_batch)
        if self.fail_on_error:
            tally.raise_if_failed()
        yield (_partition_index(), tally.sent, tally.failed)


def _partition_index() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else -1


def foreach_partition_writer(
    conf: Mapping[str, Any],
    topic: str,
    *,
    value_col: str | int = "value",
    key_col: str | int | None = None,
    headers_col: str | int | None = None,
    partition_col: str | int | None = None,
    timestamp_col: str | int | None = None,
    use_batch: bool = True,
    value_format: str | None = None,
) -> PartitionWriter:
    """A picklable function for ``df.foreachPartition`` / ``rdd.foreachPartition``.

    Rows (Spark ``Row``s, dicts, or tuples with integer ``*_col`` positions) are read into
    columns and sent with ``produce_batch`` (``use_batch=False``: one ``produce`` per row).
    At the end of the partition it flushes; if any record failed it raises ``DeliveryError``
    with the first error and the failure count, so Spark retries the task.

    This is the Row path: Spark makes a Python ``Row`` per record before this function
    sees it, which costs more than producing it. For DataFrames prefer the Arrow paths,
    ``df.write.format("kafka_fast")`` (see ``kafka_fast.spark.datasource``) or
    ``write_kafka``; keep this one for RDDs or jobs that already iterate rows.
    """
    from .columns import ColumnSpec

    spec = ColumnSpec(value_col, key_col, headers_col, partition_col, timestamp_col,
                      value_format)
    return PartitionWriter(conf, topic, spec, use_batch)


def map_partitions_producer(
    conf: Mapping[str, Any],
    topic: str,
    *,
    value_col: str | int = "value",
    key_col: str | int | None = None,
    headers_col: str | int | None = None,
    partition_col: str | int | None = None,
    timestamp_col: str | int | None = None,
    use_batch: bool = True,
    value_format: str | None = None,
    fail_on_error: bool = False,
) -> PartitionCounter:
    """A picklable function for ``rdd.mapPartitions`` yielding one
    ``(partition_index, records_sent, records_failed)`` tuple per Spark partition.

    Failures are reported as data; ``fail_on_error=True`` raises ``DeliveryError`` instead.
    """
    from .columns import ColumnSpec

    spec = ColumnSpec(value_col, key_col, headers_col, partition_col, timestamp_col,
                      value_format)
    return PartitionCounter(conf, topic, spec, use_batch, fail_on_error)


# ---------------------------------------------------------------------------------------------
# Arrow path: DataFrame -> Kafka-shaped columns in the JVM -> Arrow batches -> produce_batch

RESULT_SCHEMA = "partition_index int, records_sent long, records_failed long"


def df_to_kafka_columns(
    df: Any,
    *,
    value_col: str = "value",
    key_col: str | None = None,
    headers_col: str | None = None,
    partition_col: str | None = None,
    timestamp_col: str | None = None,
    value_format: str | None = None,
) -> Any:
    """``df`` reduced, in Spark SQL, to the columns of Spark's Kafka sink.

    The result has ``value binary`` and, when asked for, ``key binary``,
    ``headers array<struct<key string, value binary>>``, ``partition int`` and
    ``timestamp timestamp``. Strings become UTF-8 bytes; with ``value_format="json"``
    structs, maps and arrays become JSON text (``to_json``) and other scalars their text.
    A long timestamp column is read as milliseconds since the epoch.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from .columns import ColumnSpec

    ColumnSpec(value_col, key_col, headers_col, partition_col, timestamp_col, value_format)
    fields = {f.name: f.dataType for f in df.schema.fields}

    def typ(name: str) -> Any:
        if name not in fields:
            raise KeyError(f"column {name!r} is not in the DataFrame (columns: {list(fields)})")
        return fields[name]

    def as_binary(name: str, fmt: str | None) -> Any:
        t, col = typ(name), F.col(name)
        if isinstance(t, T.BinaryType):
            return col
        if isinstance(t, T.StringType):
            return col.cast("binary")
        if fmt == "json":
            if isinstance(t, (T.StructType, T.MapType, T.ArrayType)):
                return F.to_json(col).cast("binary")
            return col.cast("string").cast("binary")
        raise TypeError(
            f"column {name!r} is {t.simpleString()}; Kafka values must be binary or string "
            "(pass value_format='json' to serialise other values as JSON)"
        )

    out = [as_binary(value_col, value_format).alias("value")]
    if key_col is not None:
        out.append(as_binary(key_col, None).alias("key"))
    if headers_col is not None:
        out.append(_headers_column(headers_col, typ(headers_col)).alias("headers"))
    if partition_col is not None:
        t = typ(partition_col)
        if not isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
            raise TypeError(f"column {partition_col!r} is {t.simpleString()}; a partition "
                            "column must be an integer")
        out.append(F.col(partition_col).cast("int").alias("partition"))
    if timestamp_col is not None:
        t = typ(timestamp_col)
        if isinstance(t, T.TimestampType):
            out.append(F.col(timestamp_col).alias("timestamp"))
        elif isinstance(t, T.LongType):
            out.append(F.timestamp_millis(F.col(timestamp_col)).alias("timestamp"))
        else:
            raise TypeError(f"column {timestamp_col!r} is {t.simpleString()}; a timestamp "
                            "column must be a timestamp or a long of epoch milliseconds")
    return df.select(*out)


def _headers_column(name: str, t: Any) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    col = F.col(name)
    if isinstance(t, T.MapType) and isinstance(t.keyType, T.StringType):
        col, vt = F.map_entries(col), t.valueType
    elif (isinstance(t, T.ArrayType) and isinstance(t.elementType, T.StructType)
          and [f.name for f in t.elementType.fields] == ["key", "value"]
          and isinstance(t.elementType["key"].dataType, T.StringType)):
        vt = t.elementType["value"].dataType
    else:
        raise TypeError(f"column {name!r} is {t.simpleString()}; headers must be "
                        "array<struct<key string, value binary|string>> or map<string, ...>")
    if not isinstance(vt, (T.BinaryType, T.StringType)):
        raise TypeError(f"column {name!r}: header values must be binary or string, "
                        f"not {vt.simpleString()}")
    return F.transform(col, lambda h: F.struct(h["key"].alias("key"),
                                               h["value"].cast("binary").alias("value")))


def packed(array: Any) -> tuple[Any, Any, Any] | tuple[Any, Any]:
    """An Arrow binary array as the packed ``(data, offsets[int64 N+1], nulls)`` column."""
    import numpy as np
    import pyarrow as pa

    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    bufs = array.buffers()
    width = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    offsets = np.frombuffer(bufs[1], dtype=width, count=n + 1, offset=array.offset * width().itemsize)
    data = bufs[2] if bufs[2] is not None else b""
    offsets = offsets.astype(np.int64, copy=False)
    if array.null_count:
        nulls = array.is_null().to_numpy(zero_copy_only=False)
        return (data, offsets, nulls)
    return (data, offsets)


def _arrow_headers(array: Any) -> list | None:
    from .columns import encode_headers

    rows = array.to_pylist()
    if not any(rows):
        return None
    return [encode_headers(h, "headers") for h in rows]


def _arrow_timestamps(array: Any) -> Any:
    """Epoch milliseconds of an Arrow timestamp column (0, "now", for nulls)."""
    import pyarrow as pa

    micros = array.cast(pa.timestamp("us", tz=array.type.tz)).cast(pa.int64()).fill_null(0)
    return micros.to_numpy() // 1000


def send_arrow_batches(batches: Iterable[Any], conf: Mapping[str, Any], topic: str | None,
                       producer: Any = None) -> Tally:
    """Produce Arrow record batches shaped by ``df_to_kafka_columns`` (or Spark's Kafka-sink
    columns); wait for deliveries. Without ``topic`` every row names its own (``topic``
    column)."""

    def produce_all(producer: Producer, tally: Tally) -> None:
        for batch in coalesced(batches):
            for to, partition, group in arrow_partition_groups(batch, topic):
                cols = group.schema.names
                _produce_batch(
                    producer, to, tally, partition,
                    packed(group.column("value")),
                    keys=packed(group.column("key")) if "key" in cols else None,
                    timestamps=(_arrow_timestamps(group.column("timestamp"))
                                if "timestamp" in cols else None),
                    headers=(_arrow_headers(group.column("headers"))
                             if "headers" in cols else None),
                )

    return _deliver(conf, topic or "(from the topic column)", produce_all, producer)


def coalesced(batches: Iterable[Any], rows: int = COALESCE_ROWS,
              nbytes: int = COALESCE_BYTES) -> Iterator[Any]:
    """``batches`` (Arrow record batches of one schema) joined into batches of at least
    ``rows`` rows or ``nbytes`` bytes (the last may be smaller), order kept; a batch that is
    large enough alone passes through uncopied."""
    pending: list[Any] = []
    have_rows = have_bytes = 0
    for batch in batches:
        if pending and (batch.num_rows >= rows or batch.nbytes >= nbytes):
            yield _joined(pending)  # what came before a batch large enough alone
            pending, have_rows, have_bytes = [], 0, 0
        pending.append(batch)
        have_rows += batch.num_rows
        have_bytes += batch.nbytes
        if have_rows >= rows or have_bytes >= nbytes:
            yield _joined(pending)
            pending, have_rows, have_bytes = [], 0, 0
    if pending:
        yield _joined(pending)


def _joined(batches: list[Any]) -> Any:
    """One batch of ``batches`` (the batch itself when there is one)."""
    if len(batches) == 1:
        return batches[0]
    import pyarrow as pa

    # the C library's allocator: its heap keeps the memory of one joined batch for the next,
    # where the default pool hands fresh pages back and faults them in again every time
    joined = pa.Table.from_batches(batches).combine_chunks(
        memory_pool=pa.system_memory_pool()).to_batches()
    return joined[0] if joined else batches[0]  # no batch of a table of no rows


def arrow_partition_groups(batch: Any, topic: str | None = None) -> list[tuple[str, int, Any]]:
    """``(topic, partition, rows)`` of a batch, grouped by its ``topic`` column (unless
    ``topic`` is given) and ``partition`` column (order kept inside each group); partition
    -1 when there is no partition column."""
    import numpy as np
    import pyarrow as pa

    from ..producer.contract import partition_cells
    from ..records.arrow import integer_values, numeric

    if batch.num_rows == 0:
        return []
    names = batch.schema.names
    if topic is None:
        if "topic" not in names:
            raise ValueError("no topic: set the 'topic' option or give a 'topic' column")
        topic_col = batch.column("topic")
        if topic_col.null_count:
            raise ValueError("the 'topic' column holds nulls; set the 'topic' option or fill it")
        codes = topic_col.dictionary_encode()
        topics = codes.dictionary.to_pylist()
        t = np.asarray(codes.indices, dtype=np.int64)
    else:
        topics, t = [topic], np.zeros(batch.num_rows, dtype=np.int64)
    if "partition" in names:
        column = batch.column("partition")
        p = partition_cells(integer_values(column) if pa.types.is_integer(column.type)
                            else column.to_numpy(zero_copy_only=False),
                            column.is_null().to_numpy(zero_copy_only=False)
                            if column.null_count else None, "partition")
    else:
        p = np.full(batch.num_rows, -1, dtype=np.int64)
    if len(topics) == 1 and (p == p[0]).all():
        return [(topics[0], int(p[0]), batch)]
    key = t * (1 << 32) + (p + 1)
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    return [(topics[int(t[idx[0]])], int(p[idx[0]]), batch.take(numeric(idx, pa.int64())))
            for idx in np.split(order, bounds)]


class ArrowPartitionWriter:
    """``f(batches)`` for ``mapInArrow``: produce, flush, yield one result row per partition."""

    def __init__(self, conf: Mapping[str, Any], topic: str, fail_on_error: bool = True) -> None:
        self.conf = producer_config(conf)
        self.topic = topic
        self.fail_on_error = fail_on_error

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        from ..records.arrow import numeric

        tally = send_arrow_batches(batches, self.conf, self.topic)
        if self.fail_on_error:
            tally.raise_if_failed()
        yield pa.RecordBatch.from_arrays(
            [numeric(np.array([_partition_index()], np.int32), pa.int32()),
             numeric(np.array([tally.sent], np.int64), pa.int64()),
             numeric(np.array([tally.failed], np.int64), pa.int64())],
            names=["partition_index", "records_sent", "records_failed"],
        )


def write_kafka(
    df: Any,
    conf: Mapping[str, Any],
    topic: str,
    *,
    value_col: str = "value",
    key_col: str | None = None,
    headers_col: str | None = None,
    partition_col: str | None = None,
    timestamp_col: str | None = None,
    value_format: str | None = None,
    use_arrow: bool = True,
    use_batch: bool = True,
) -> int:
    """Write ``df`` to ``topic``; returns the number of records delivered.

    ``use_arrow`` (default) converts the columns in Spark SQL (``df_to_kafka_columns``) and
    hands them to Python as Arrow batches (``mapInArrow``), so no Python object is made per
    row; otherwise ``df.foreachPartition`` with ``foreach_partition_writer``. Either way a
    Spark task whose records failed raises ``DeliveryError`` and Spark retries it.
    """
    opts: dict[str, Any] = dict(
        value_col=value_col, key_col=key_col, headers_col=headers_col,
        partition_col=partition_col, timestamp_col=timestamp_col, value_format=value_format)
    if use_arrow and use_batch and hasattr(df, "mapInArrow"):
        shaped = df_to_kafka_columns(df, **opts)
        rows = shaped.mapInArrow(ArrowPartitionWriter(conf, topic), RESULT_SCHEMA).collect()
        return sum(r.records_sent for r in rows)
    counter = map_partitions_producer(conf, topic, use_batch=use_batch, fail_on_error=True,
                                      **opts)
    return sum(sent for _, sent, _ in df.rdd.mapPartitions(counter).collect())
