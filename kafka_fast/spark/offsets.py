"""Offset specifications, their resolution into per-partition ranges, and range splitting.

``starting_offsets`` / ``ending_offsets`` follow Spark's Kafka source: ``"earliest"``,
``"latest"``, or a JSON string / dict ``{"topic": {"0": 23, "1": -2}}`` where -2 means
earliest and -1 latest. A JSON spec must name every partition of every topic read.
Resolution runs on the driver; the result is a list of ``OffsetRange`` (end exclusive).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError, KafkaException
from ..topic_partition import TopicPartition

if TYPE_CHECKING:
    from ..consumer import Consumer

EARLIEST = -2
LATEST = -1


class DataLossError(KafkaException):
    """A requested offset range names records the log does not hold (deleted or never written)."""

    def __init__(self, reason: str) -> None:
        super().__init__(KafkaError.of(KafkaError.OFFSET_OUT_OF_RANGE, reason))


@dataclass(frozen=True, order=True)
class OffsetRange:
    """Records ``start`` (inclusive) to ``end`` (exclusive) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def parse_offsets(
    spec: str | Mapping[str, Mapping[Any, int]], *, name: str
) -> int | dict[tuple[str, int], int]:
    """Parse one offset spec into ``EARLIEST``/``LATEST`` or ``{(topic, partition): offset}``.

    ``name`` (``starting_offsets`` or ``ending_offsets``) is used in error messages.
    """
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() == "earliest":
            return EARLIEST
        if text.lower() == "latest":
            return LATEST
        try:
            spec = json.loads(text)
        except ValueError:
            raise ValueError(
                f"{name} must be 'earliest', 'latest' or a JSON object like "
                f'{{"topic": {{"0": 23}}}}, got {spec!r}'
            ) from None
    if not isinstance(spec, Mapping):
        raise ValueError(f"{name} must be a JSON object of topics, got {type(spec).__name__}")
    out: dict[tuple[str, int], int] = {}
    for topic, partitions in spec.items():
        if not isinstance(topic, str) or not isinstance(partitions, Mapping):
            raise ValueError(
                f"{name} must map topic names to {{partition: offset}} objects, got "
                f"{topic!r}: {partitions!r}"
            )
        for part, offset in partitions.items():
            try:
                p = int(part)
            except (TypeError, ValueError):
                raise ValueError(f"{name}: partition {part!r} of topic {topic!r} is not an integer") from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < LATEST - 1:
                raise ValueError(
                    f"{name}: offset {offset!r} for {topic}-{p} must be an integer >= 0, "
                    "-2 (earliest) or -1 (latest)"
                )
            out[(topic, p)] = offset
    return out


def check_specs(start: int | dict, end: int | dict) -> None:
    """Reject what a batch read cannot mean, as Spark's source does."""
    if start == LATEST:
        raise ValueError("starting_offsets cannot be 'latest' for a batch read")
    if end == EARLIEST:
        raise ValueError("ending_offsets cannot be 'earliest' for a batch read")
    if isinstance(start, dict):
        bad = sorted(tp for tp, off in start.items() if off == LATEST)
        if bad:
            raise ValueError(f"starting_offsets cannot be -1 (latest) in a batch read: {bad}")
    if isinstance(end, dict):
        bad = sorted(tp for tp, off in end.items() if off == EARLIEST)
        if bad:
            raise ValueError(f"ending_offsets cannot be -2 (earliest) in a batch read: {bad}")


def spec_for(
    spec: int | dict[tuple[str, int], int], partitions: Iterable[tuple[str, int]], *, name: str
) -> dict[tuple[str, int], int]:
    """Expand a parsed spec to every partition; a JSON spec must name exactly those partitions."""
    parts = sorted(partitions)
    if isinstance(spec, int):
        return dict.fromkeys(parts, spec)
    missing = sorted(set(parts) - set(spec))
    extra = sorted(set(spec) - set(parts))
    if missing or extra:
        raise ValueError(
            f"{name} must name every partition read and no other (-2 earliest, -1 latest); "
            f"missing {missing}, unknown {extra}"
        )
    return {tp: spec[tp] for tp in parts}


def make_ranges(
    starts: Mapping[tuple[str, int], int],
    ends: Mapping[tuple[str, int], int],
    bounds: Mapping[tuple[str, int], tuple[int, int]],
    *,
    fail_on_data_loss: bool = True,
) -> list[OffsetRange]:
    """Turn resolved specs into ranges, checking them against the log's ``(first, end)`` bounds.

    ``starts``/``ends`` hold offsets or ``EARLIEST``/``LATEST``; ``bounds`` the log start
    offset and the offset after the last record. A start before the log start (deleted
    records) or an end past the log end raises ``DataLossError`` unless
    ``fail_on_data_loss`` is False, in which case the range is clipped to the log.
    """
    out = []
    for tp in sorted(starts):
        first, last = bounds[tp]
        start = first if starts[tp] == EARLIEST else starts[tp]
        end = last if ends[tp] == LATEST else ends[tp]
        if start > end:
            raise ValueError(
                f"{tp[0]}-{tp[1]}: starting offset {start} is after ending offset {end}"
            )
        if start < first or end > last:
            if fail_on_data_loss:
                raise DataLossError(
                    f"{tp[0]}-{tp[1]}: range [{start}, {end}) is not within the log "
                    f"[{first}, {last}): records were deleted or do not exist "
                    "(pass fail_on_data_loss=False to read what is there)"
                )
            start = min(max(start, first), last)
            end = min(max(end, start), last)
        out.append(OffsetRange(tp[0], tp[1], start, end))
    return out


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Drop empty ranges and split the rest into at least ``min_partitions`` pieces.

    Pieces are given to ranges in proportion to their size (at least one each, never more
    than a range has records); the result has ``max(min_partitions, non-empty ranges)``
    pieces, or one per record if there are fewer records than that. Pieces of a range are
    as equal as possible, in offset order.
    """
    if min_partitions is not None and min_partitions < 1:
        raise ValueError(f"min_partitions must be >= 1, got {min_partitions}")
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    target = min(min_partitions, total)
    shares = [r.size * target / total for r in ranges]
    parts = [min(max(1, int(s)), r.size) for s, r in zip(shares, ranges, strict=True)]
    # settle on exactly ``target`` pieces: add where flooring cut most (and room is left),
    # take back where the one-piece minimum gave most beyond the share
    while sum(parts) < target:
        i = max((i for i in range(len(ranges)) if parts[i] < ranges[i].size),
                key=lambda i: shares[i] - parts[i])
        parts[i] += 1
    while sum(parts) > target:
        i = max((i for i in range(len(ranges)) if parts[i] > 1),
                key=lambda i: parts[i] - shares[i])
        parts[i] -= 1
    out = []
    for r, n in zip(ranges, parts, strict=True):
        step, extra = divmod(r.size, n)
        start = r.start
        for k in range(n):
            end = start + step + (1 if k < extra else 0)
            out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out


def topic_partitions(consumer: Consumer, topics: Iterable[str], timeout: float) -> list[tuple[str, int]]:
    """Every ``(topic, partition)`` of ``topics`` from the cluster metadata."""
    out: list[tuple[str, int]] = []
    for topic in topics:
        md = consumer.list_topics(topic, timeout=timeout)
        info = md.topics.get(topic)
        error = getattr(info, "error", None) if info is not None else None
        if info is None or error or not info.partitions:
            raise KafkaException(
                KafkaError.of(
                    KafkaError.UNKNOWN_TOPIC_OR_PART,
                    f"topic {topic!r} is unknown or has no partitions ({error})",
                )
            )
        out.extend((topic, p) for p in info.partitions)
    return sorted(out)


def log_bounds(
    consumer: Consumer, partitions: Iterable[tuple[str, int]], timeout: float, *, exact_end: bool,
    known_ends: dict[tuple[str, int], tuple[int, int]] | None = None,
) -> dict[tuple[str, int], tuple[int, int]]:
    """``{(topic, partition): (log start offset, log end offset)}`` via ListOffsets.

    With ``exact_end`` the end is confirmed by reading: the consumer is positioned one before
    the reported high watermark and reads until the partition reports its end, so a broker
    that reports the watermark as "base offset of the last batch + 1" (Tansu) still yields
    the offset after the true last record. ``known_ends`` (``{tp: (reported high watermark,
    end read)}``, updated here) skips that read where the watermark has not moved since: the
    log's last batch is then the one read before.
    """
    bounds = {}
    for topic, p in partitions:
        marks = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout,
                                               cached=False)
        assert marks is not None  # None comes only from cached=True
        low, high = marks
        bounds[(topic, p)] = (low, high)
    if exact_end:
        known = {} if known_ends is None else known_ends
        probe = []
        for tp, (low, high) in bounds.items():
            seen = known.get(tp)
            if seen is not None and seen[0] == high:
                bounds[tp] = (low, max(high, seen[1]))
            elif high > low:
                probe.append(tp)
        for tp, end in read_log_ends(consumer, probe, bounds, timeout).items():
            low, high = bounds[tp]
            bounds[tp] = (low, max(high, end))
            known[tp] = (high, bounds[tp][1])
    return bounds


def read_log_ends(
    consumer: Consumer,
    partitions: list[tuple[str, int]],
    bounds: Mapping[tuple[str, int], tuple[int, int]],
    timeout: float,
) -> dict[tuple[str, int], int]:
    """Read each partition from ``high - 1`` until it reports end of partition.

    Needs a consumer created with ``enable.partition.eof=true``; returns the offset after the
    last record seen (or the watermark if none was). Raises ``KafkaException`` with
    ``_TIMED_OUT`` if some partition did not reach its end within ``timeout`` seconds.
    """
    if not partitions:
        return {}
    ends = {tp: bounds[tp][1] for tp in partitions}
    pending = set(partitions)
    consumer.assign([TopicPartition(t, p, bounds[(t, p)][1] - 1) for t, p in partitions])
    deadline = time.monotonic() + timeout
    try:
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaException(
                    KafkaError.of(
                        KafkaError._TIMED_OUT,
                        f"could not find the end of {sorted(pending)} within {timeout} s",
                    )
                )
            for msg in consumer.consume(num_messages=10_000, timeout=min(left, 1.0)):
                tp = (msg.topic(), msg.partition())
                err = msg.error()
                if err:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending.discard(tp)
                        continue
                    raise KafkaException(err)
                if tp in ends:
                    offset = msg.offset()
                    assert offset is not None  # a record read from the log has its offset
                    ends[tp] = max(ends[tp], offset + 1)
    finally:
        consumer.unassign()
    return ends


def spark_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """The Spark partitions Spark's Kafka source makes of ``ranges`` (its
    ``KafkaOffsetRangeCalculator``), so a data source read has the same tasks.

    Empty ranges are dropped. ``max_records`` (``maxRecordsPerPartition``) first cuts every
    range into ``ceil(size / max_records)`` pieces. Then, with fewer pieces than
    ``min_partitions``, each range gets ``max(round(size / total * min_partitions), 1)``
    pieces, the share computed among the ranges that get more than one.
    """
    if min_partitions is not None and min_partitions < 1:
        raise ValueError(f"min_partitions must be >= 1, got {min_partitions}")
    if max_records is not None and max_records < 1:
        raise ValueError(f"max_records must be >= 1, got {max_records}")
    pieces = [r for r in ranges if r.size > 0]
    if max_records is not None:
        pieces = [p for r in pieces for p in _divide(r, -(-r.size // max_records))]
    if min_partitions is None or len(pieces) >= min_partitions:
        return pieces
    total = sum(r.size for r in pieces)
    whole = [r for r in pieces if _part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in whole)
    split_min = max(min_partitions - len(whole), 1)
    keep = {(r.topic, r.partition) for r in whole}
    return [p for r in pieces
            for p in ([r] if (r.topic, r.partition) in keep
                      else _divide(r, _part_count(r.size, split_total, split_min)))]


def _part_count(size: int, total: int, parts: int) -> int:
    # Java's Math.round: half up
    return max(int(size / total * parts + 0.5), 1)


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``r`` in ``parts`` pieces in offset order, the later ones taking the remainder."""
    out = []
    remaining, start = r.size, r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, r.end)
        if end > start:
            out.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return out


def pack_ranges(ranges: Iterable[OffsetRange], tasks: int) -> list[tuple[OffsetRange, ...]]:
    """``ranges`` in at most ``tasks`` groups (Spark tasks), each range whole.

    Largest range first to the group with the fewest records so far (the earliest group on a
    tie); each group keeps its ranges in their order, groups are ordered by their first range.
    Deterministic: the same ranges and ``tasks`` always give the same groups.
    """
    if tasks < 1:
        raise ValueError(f"tasks must be >= 1, got {tasks}")
    items = list(ranges)
    count = min(tasks, len(items))
    groups: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for i in sorted(range(len(items)), key=lambda i: (-items[i].size, i)):
        least = min(range(count), key=lambda g: (loads[g], g))
        groups[least].append(i)
        loads[least] += items[i].size
    ordered = sorted((sorted(g) for g in groups), key=lambda g: g[0])
    return [tuple(items[i] for i in g) for g in ordered]
