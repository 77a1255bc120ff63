"""Sink side of the ``kafka_fast`` data source: options, schema checks and the task writes.

Columns are Spark's Kafka sink's: ``value`` (binary or string, required), ``key``, ``topic``
(used unless the ``topic`` option is set), ``partition`` and ``headers``; other columns are
ignored. Each task produces its Arrow batches with ``send_arrow_batches`` (the same code as
``write_kafka``) and fails with ``DeliveryError`` if any record failed.

Exactly once (``exactlyOnce=true``, streaming only): each Spark partition of a micro-batch is
written in one Kafka transaction with the transactional id ``<transactionalIdPrefix>-p<N>``
(stable across batches and restarts, so a retried or restarted task fences the earlier
attempt, which aborts what it left open). The task flushes and *prepares* the transaction
(``Producer.prepare_transaction``) and returns it in its commit message; the driver commits
every task's transaction when Spark commits the micro-batch (``end_prepared``), or aborts
them when the batch fails. The transaction also commits the offset ``batchId + 1`` of the
consumer group ``<transactionalIdPrefix>-p<N>`` on partition 0 of the target topic as a
marker: a re-run of a (batch, partition) whose transaction the driver did commit (a crash
between that and Spark's own commit log) finds the marker and writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..topic_partition import TopicPartition
from . import clients
from .source import kafka_conf
from .writer import producer_config, send_arrow_batches

log = logging.getLogger("kafka_fast.spark")

SINK_COLUMNS = ("key", "value", "topic", "partition", "headers")
SINK_OPTIONS = {"topic", "exactlyonce", "transactionalidprefix", "path", "checkpointlocation"}
MARKER_ROLE = "sink-marker"


@dataclass(frozen=True)
class SinkOptions:
    """Parsed sink options (picklable: sent to the executors with the writer)."""

    conf: dict[str, str]
    topic: str | None = None
    exactly_once: bool = False
    transactional_id_prefix: str | None = None


def parse_sink_options(options: Mapping[str, str], *, streaming: bool) -> SinkOptions:
    """Check and parse the writer's options; raises ``ValueError`` naming the bad option."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(k for k in lowered if not k.startswith("kafka.") and k not in SINK_OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for the kafka_fast sink")
    conf = kafka_conf(lowered)
    raw = str(lowered.get("exactlyonce", "false")).strip().lower()
    if raw not in ("true", "false"):
        raise ValueError(f"option 'exactlyOnce' must be 'true' or 'false', got {raw!r}")
    exactly_once = raw == "true"
    prefix = lowered.get("transactionalidprefix")
    topic = lowered.get("topic")
    if exactly_once:
        if not streaming:
            raise ValueError("option 'exactlyOnce' is for streaming writes (writeStream)")
        if not prefix:
            raise ValueError("option 'transactionalIdPrefix' must be set with exactlyOnce=true "
                             "(a name unique to this query, kept across restarts)")
        if not topic:
            raise ValueError("option 'topic' must be set with exactlyOnce=true")
        if "transactional.id" in conf:
            raise ValueError("option 'kafka.transactional.id' cannot be set: the sink makes one "
                             "per Spark partition from 'transactionalIdPrefix'")
    return SinkOptions(conf=conf, topic=topic, exactly_once=exactly_once,
                       transactional_id_prefix=prefix)


def check_sink_schema(schema: Any, opts: SinkOptions) -> None:
    """Reject a DataFrame Spark's Kafka sink would reject, naming the column."""
    from pyspark.sql import types as T

    fields = {f.name.lower(): f.dataType for f in schema.fields}
    binary_or_string = (T.BinaryType, T.StringType)
    if "value" not in fields:
        raise ValueError(f"the DataFrame needs a 'value' column (columns: {schema.names})")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], binary_or_string):
            raise ValueError(f"column '{name}' must be binary or string, not "
                             f"{fields[name].simpleString()}")
    if opts.topic is None:
        if "topic" not in fields:
            raise ValueError("no topic: set the 'topic' option or give a 'topic' column")
    if "topic" in fields and not isinstance(fields["topic"], T.StringType):
        raise ValueError(f"column 'topic' must be string, not {fields['topic'].simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], T.IntegerType):
        raise ValueError("column 'partition' must be int, not "
                         f"{fields['partition'].simpleString()}")
    if "headers" in fields:
        t = fields["headers"]
        ok = (isinstance(t, T.ArrayType) and isinstance(t.elementType, T.StructType)
              and [f.name for f in t.elementType.fields] == ["key", "value"])
        if not ok:
            raise ValueError("column 'headers' must be array<struct<key:string,value:binary>>, "
                             f"not {t.simpleString()}")


def sink_batches(batches: Iterable[Any], topic: str | None) -> Iterator[Any]:
    """The sink's columns of each batch (``topic`` dropped when the option names it)."""
    wanted = [c for c in SINK_COLUMNS if not (c == "topic" and topic is not None)]
    for batch in batches:
        names = {n.lower(): n for n in batch.schema.names}
        cols = [names[c] for c in wanted if c in names]
        yield batch.select(cols).rename_columns([c.lower() for c in cols])


def write_partition(opts: SinkOptions, batches: Iterable[Any]) -> int:
    """Write one task's batches (at least once); the records delivered."""
    conf = producer_config(opts.conf)
    tally = send_arrow_batches(sink_batches(batches, opts.topic), conf, opts.topic)
    tally.raise_if_failed()
    return tally.sent


def write_partition_once(opts: SinkOptions, batches: Iterable[Any], batch_id: int,
                         partition_id: int) -> tuple[int, Any]:
    """Write one task's batches in one transaction with the (batch, partition) marker and
    prepare it (flushed, left open for the driver to commit). ``(records, prepared)``;
    ``prepared`` is None when an earlier run already committed this (batch, partition)."""
    from ..consumer import Consumer
    from ..producer import Producer

    assert opts.topic is not None and opts.transactional_id_prefix is not None
    name = f"{opts.transactional_id_prefix}-p{partition_id}"
    marker = TopicPartition(opts.topic, 0)
    check_conf = {**opts.conf, "group.id": name, "enable.auto.commit": False}
    checker = clients.cached(MARKER_ROLE, check_conf, Consumer)
    conf = producer_config({**opts.conf, "transactional.id": name})
    # a fresh producer per task: initialising the id fences earlier attempts and aborts
    # what they left open (a failed attempt's records, a batch the driver never committed),
    # so the marker read next is settled
    producer = Producer(conf)
    try:
        producer.init_transactions()
        if checker.committed([marker], timeout=30)[0].offset >= batch_id + 1:
            for _ in batches:  # drain what Spark sends
                pass
            return 0, None
        producer.begin_transaction()
        tally = send_arrow_batches(sink_batches(batches, opts.topic), conf, opts.topic,
                                   producer=producer)
        tally.raise_if_failed()
        producer.send_offsets_to_transaction(
            [TopicPartition(opts.topic, 0, batch_id + 1)], checker.consumer_group_metadata())
        prepared = producer.prepare_transaction()
    except BaseException:
        _abort_quietly(producer)
        raise
    finally:
        producer.close()
    return tally.sent, prepared


def _abort_quietly(producer: Any) -> None:
    try:
        producer.abort_transaction(10)
    except Exception:  # the next attempt's init_transactions aborts it anyway
        log.warning("aborting the failed task's transaction failed", exc_info=True)


def end_prepared(opts: SinkOptions, prepared: Iterable[Any], commit: bool) -> None:
    """On the driver: commit (or abort) the transactions the tasks prepared."""
    from ..producer import Producer

    pending = [p for p in prepared if p is not None]
    if not pending:
        return
    producer = Producer(opts.conf)
    try:
        for p in pending:
            producer.end_prepared_transaction(p, commit=commit, timeout=60)
    finally:
        producer.close()
