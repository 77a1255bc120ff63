"""Options of the ``kafka_fast`` Spark data source and their resolution into offset ranges.

Option names and meanings follow Spark's built-in Kafka source: ``kafka.*`` options go to
the kafka_fast client with the prefix stripped; exactly one of ``subscribe``,
``subscribePattern`` and ``assign`` picks the partitions. Streaming offsets are the JSON
shape Spark's source uses, ``{"topic": {"0": 23}}`` (next offset to read per partition).
Errors name the option at fault.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import KafkaException
from ..topic_partition import TopicPartition
from .offsets import (
    EARLIEST,
    LATEST,
    DataLossError,
    OffsetRange,
    check_specs,
    log_bounds,
    make_ranges,
    parse_offsets,
    spec_for,
    topic_partitions,
)

TP = tuple[str, int]
R = TypeVar("R")
#: Options the source knows, lower case (Spark hands them over case-insensitively).
SOURCE_OPTIONS = {
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "startingtimestamp", "startingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
    "endingtimestamp", "endingoffsetsbytimestamp", "failondataloss", "includeheaders",
    "minpartitions", "maxrecordsperpartition", "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
    "groupidprefix", "packpartitions", "fetchoffset.numretries", "fetchoffset.retryintervalms",
    "polltimeoutms", "kafkaconsumer.polltimeoutms", "path",
}
#: ``kafka.*`` options Spark's Kafka source refuses (the source manages them), with the reason.
REFUSED_KAFKA_OPTIONS = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "key.deserializer": "keys are always read as bytes",
    "value.deserializer": "values are always read as bytes",
    "enable.auto.commit": "the source commits no offset",
    "interceptor.classes": "the source reads raw bytes",
}
#: Where ``startingOffsetsByTimestamp`` / ``startingTimestamp`` match no record.
TIMESTAMP_STRATEGIES = ("error", "latest")


def kafka_conf(options: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options with the prefix stripped; bootstrap servers are required."""
    conf = {k[len("kafka."):]: v for k, v in options.items() if k.lower().startswith("kafka.")}
    if not conf.get("bootstrap.servers"):
        raise ValueError("option 'kafka.bootstrap.servers' must be set (e.g. "
                         ".option('kafka.bootstrap.servers', 'host:9092'))")
    return conf


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower(), options.get(name))
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"option '{name}' must be 'true' or 'false', got {raw!r}")
    return text == "true"


def driver_cores() -> int:
    """CPU cores this process may run on (the driver host's, where reads are planned)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _pack_partitions(options: Mapping[str, str], parallelism: int | None) -> int | None:
    """``packPartitions``: ``true`` (default) -> ``parallelism`` (the session's, when the
    data source was registered with it) or else the driver's cores, an integer -> itself,
    ``false`` -> None (one task per range)."""
    raw = options.get("packpartitions")
    text = "true" if raw is None else str(raw).strip().lower()
    if text == "true":
        return parallelism if parallelism is not None and parallelism > 0 else driver_cores()
    if text == "false":
        return None
    try:
        tasks = int(text)
    except ValueError:
        tasks = 0
    if tasks < 1:
        raise ValueError("option 'packPartitions' must be 'true', 'false' or a positive "
                         f"integer (the most tasks), got {raw!r}")
    return tasks


def _positive_int(options: Mapping[str, str], name: str, *, minimum: int = 1) -> int | None:
    raw = options.get(name.lower(), options.get(name))
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"option '{name}' must be {what}, got {raw!r}")
    return value


_DURATION_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000,
                   "h": 3_600_000, "d": 86_400_000}


def duration_ms(raw: str, name: str) -> int:
    """A Spark duration (``"15m"``, ``"500ms"``, ``"2 s"``; a bare number is milliseconds, as
    Spark's ``timeStringAsMs``) in ms."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", str(raw).lower())
    unit = match.group(2) if match else ""
    if match is None or (unit and unit not in _DURATION_UNITS):
        raise ValueError(f"option '{name}' must be a duration like '15m', '30s' or '500ms', "
                         f"got {raw!r}")
    return int(int(match.group(1)) * _DURATION_UNITS[unit or "ms"])


def _timestamp(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"option '{name}' must be epoch milliseconds, got {raw!r}") from None


def java_pattern(pattern: str) -> re.Pattern[str]:
    """A ``subscribePattern`` (a Java regular expression) as a Python one; a construct Python
    cannot match the same way is refused naming the option."""
    text = re.sub(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", r"(?P<\1>", pattern)  # named groups
    text = re.sub(r"(?<!\\)((?:\\\\)*)\\z", r"\1\\Z", text)  # Java's end of input
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"option 'subscribePattern' is not a regular expression kafka_fast "
                         f"can match like Java: {exc} (pattern {pattern!r})") from None


@dataclass(frozen=True)
class SourceOptions:
    """Parsed source options (picklable: sent to the executors with the reader)."""

    conf: dict[str, str]
    subscribe: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[TP, ...] = ()
    starting: Any = "earliest"
    ending: Any = "latest"
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[TP, int] = field(default_factory=dict)
    ending_timestamp: int | None = None
    ending_by_timestamp: dict[TP, int] = field(default_factory=dict)
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    #: ``packPartitions``: at most this many tasks per read, whole ranges shared among them
    #: (None: one task per range, as Spark's source)
    max_tasks: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    group_id_prefix: str | None = None
    fetch_attempts: int = 3
    fetch_retry_interval_ms: int = 1000
    poll_timeout_ms: int = 120_000


def parse_source_options(options: Mapping[str, str], *, streaming: bool,
                         parallelism: int | None = None) -> SourceOptions:
    """Check and parse the reader's options; raises ``ValueError`` naming the bad option.
    ``parallelism``: the session's, for ``packPartitions=true`` (None: the driver's cores)."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(k for k in lowered if not k.startswith("kafka.") and k not in SOURCE_OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for the kafka_fast source")
    conf = kafka_conf(lowered)
    for key, why in REFUSED_KAFKA_OPTIONS.items():
        if key in {k.lower() for k in conf}:
            raise ValueError(f"Kafka option 'kafka.{key}' is not supported: {why}")
    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if k in lowered]
    if len(chosen) != 1:
        raise ValueError("exactly one of the options 'subscribe', 'subscribePattern', 'assign' "
                         f"must be set, got {chosen or 'none'}")
    subscribe: tuple[str, ...] = ()
    pattern = None
    assign: tuple[TP, ...] = ()
    if chosen[0] == "subscribe":
        subscribe = tuple(t.strip() for t in lowered["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise ValueError("option 'subscribe' must name at least one topic")
    elif chosen[0] == "subscribepattern":
        pattern = lowered["subscribepattern"]
        if not pattern.strip():
            raise ValueError("option 'subscribePattern' must not be empty")
        java_pattern(pattern)
    else:
        assign = _parse_assign(lowered["assign"])
    ending_set = [k for k in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")
                  if k in lowered]
    if streaming and ending_set:
        raise ValueError(f"option {ending_set} (ending offsets) is not valid in streaming "
                         "queries")
    starting = lowered.get("startingoffsets", "latest" if streaming else "earliest")
    ending = lowered.get("endingoffsets", "latest")
    parse_offsets(starting, name="startingOffsets")
    parse_offsets(ending, name="endingOffsets")
    if not streaming:
        check_specs(parse_offsets(starting, name="startingOffsets"),
                    parse_offsets(ending, name="endingOffsets"))
    strategy = str(lowered.get("startingoffsetsbytimestampstrategy", "error")).strip().lower()
    if strategy not in TIMESTAMP_STRATEGIES:
        raise ValueError("option 'startingOffsetsByTimestampStrategy' must be 'error' or "
                         f"'latest', got {lowered['startingoffsetsbytimestampstrategy']!r}")
    attempts = _positive_int(lowered, "fetchOffset.numRetries", minimum=0)
    interval = _positive_int(lowered, "fetchOffset.retryIntervalMs", minimum=0)
    poll = lowered.get("kafkaconsumer.polltimeoutms", lowered.get("polltimeoutms"))
    delay = lowered.get("maxtriggerdelay")
    prefix = lowered.get("groupidprefix")
    if prefix is not None and not str(prefix).strip():
        raise ValueError("option 'groupIdPrefix' must not be empty")
    least = _positive_int(lowered, "minOffsetsPerTrigger")
    most = _positive_int(lowered, "maxOffsetsPerTrigger")
    if least is not None and most is not None and least > most:
        raise ValueError(f"The value of minOffsetPerTrigger({least}) is higher than the "
                         f"maxOffsetsPerTrigger({most}) (options 'minOffsetsPerTrigger', "
                         "'maxOffsetsPerTrigger')")
    return SourceOptions(
        conf=conf, subscribe=subscribe, pattern=pattern, assign=assign,
        starting=starting, ending=ending,
        starting_timestamp=_timestamp(lowered, "startingTimestamp"),
        starting_by_timestamp=_parse_timestamps(lowered, "startingOffsetsByTimestamp"),
        ending_timestamp=_timestamp(lowered, "endingTimestamp"),
        ending_by_timestamp=_parse_timestamps(lowered, "endingOffsetsByTimestamp"),
        timestamp_strategy=strategy,
        fail_on_data_loss=_bool(lowered, "failOnDataLoss", True),
        include_headers=_bool(lowered, "includeHeaders", False),
        min_partitions=_positive_int(lowered, "minPartitions"),
        max_records_per_partition=_positive_int(lowered, "maxRecordsPerPartition"),
        max_tasks=_pack_partitions(lowered, parallelism),
        max_offsets_per_trigger=most,
        min_offsets_per_trigger=least,
        max_trigger_delay_ms=(15 * 60_000 if delay is None
                              else duration_ms(delay, "maxTriggerDelay")),
        group_id_prefix=prefix,
        fetch_attempts=3 if attempts is None else max(1, attempts),
        fetch_retry_interval_ms=1000 if interval is None else interval,
        poll_timeout_ms=_positive_int({"pollTimeoutMs": poll} if poll is not None else {},
                                      "pollTimeoutMs") or 120_000,
    )


def _json_option(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"option '{name}' must be JSON, got {text!r}") from None


def _parse_assign(text: str) -> tuple[TP, ...]:
    spec = _json_option(text, "assign")
    if not isinstance(spec, Mapping) or not spec or not all(
            isinstance(ps, list) and all(type(p) is int for p in ps) for ps in spec.values()):
        raise ValueError("option 'assign' must be JSON like {\"topicA\":[0,1],\"topicB\":[0,1]}, "
                         f"got {text!r}")
    return tuple(sorted((t, p) for t, ps in spec.items() for p in ps))


def _parse_timestamps(options: Mapping[str, str], name: str) -> dict[TP, int]:
    text = options.get(name.lower())
    if text is None:
        return {}
    spec = _json_option(text, name)
    try:
        out = {(t, int(p)): ts for t, ps in spec.items() for p, ts in ps.items()}
    except (AttributeError, TypeError, ValueError):
        out = {}
    if not out or not all(type(ts) is int for ts in out.values()):
        raise ValueError(f"option '{name}' must be JSON like "
                         f"{{\"topic\": {{\"0\": 1700000000000}}}}, got {text!r}")
    return out


def to_json_offsets(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """``{(topic, partition): offset}`` as Spark's offset JSON shape."""
    out: dict[str, dict[str, int]] = {}
    for (t, p), off in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(off)
    return out


def from_json_offsets(offsets: Mapping[str, Mapping[str, int]]) -> dict[TP, int]:
    """Spark's offset JSON shape as ``{(topic, partition): offset}``."""
    return {(t, int(p)): int(o) for t, ps in offsets.items() for p, o in ps.items()}


def rate_limit(start: Mapping[TP, int], end: Mapping[TP, int], limit: int) -> dict[TP, int]:
    """Ends moved back so about ``limit`` records are read in total, as Spark's
    ``maxOffsetsPerTrigger``: each partition gets ``floor(limit * size / total)`` of its
    ``size`` new records (at least 1 where it has any), so every batch makes progress."""
    sizes = {tp: end[tp] - start.get(tp, end[tp]) for tp in end}
    sizes = {tp: n for tp, n in sizes.items() if n > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(end)
    out = dict(end)
    for tp, size in sizes.items():
        share = limit * (size / total)
        out[tp] = min(end[tp], start[tp] + (math.ceil(share) if share < 1 else math.floor(share)))
    return out


#: Topics the broker keeps for itself; a pattern never matches them (Spark lists topics
#: without the internal ones).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state",
                             "__share_group_state", "__remote_log_metadata"})


class Resolver:
    """Driver-side look-ups for one source: which partitions, where their logs start and end,
    and what the offset options mean in offsets. Holds one probe consumer until ``close``.
    A failed look-up is tried again (``fetchOffset.numRetries`` attempts in all,
    ``fetchOffset.retryIntervalMs`` apart), as Spark's source does."""

    def __init__(self, opts: SourceOptions, timeout: float = 30.0) -> None:
        self.opts = opts
        self.timeout = timeout
        self._consumer: Any = None
        # exact log ends read before, by the high watermark they were read at
        self._known_ends: dict[TP, tuple[int, int]] = {}

    def consumer(self) -> Any:
        if self._consumer is None:
            from ..consumer import Consumer
            from .reader import reader_config

            # the end of each partition is found by reading until an empty fetch reports it
            self._consumer = Consumer({**reader_config(self.opts.conf,
                                                       group_prefix=self.opts.group_id_prefix),
                                       "enable.partition.eof": True, "fetch.wait.max.ms": 10})
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def retried(self, look_up: Callable[[], R]) -> R:
        """``look_up()``, tried up to ``fetch_attempts`` times on a Kafka error."""
        for attempt in range(1, self.opts.fetch_attempts + 1):
            try:
                return look_up()
            except KafkaException:
                if attempt == self.opts.fetch_attempts:
                    raise
                time.sleep(self.opts.fetch_retry_interval_ms / 1000.0)
        raise AssertionError("unreachable")

    def partitions(self) -> list[TP]:
        """The partitions the source reads now (a pattern is searched for in every topic
        name, as Java's ``Matcher.find``)."""
        if self.opts.assign:
            return list(self.opts.assign)
        if self.opts.subscribe:
            return self.retried(lambda: topic_partitions(self.consumer(), self.opts.subscribe,
                                                         self.timeout))
        md = self.retried(lambda: self.consumer().list_topics(timeout=self.timeout))
        regex = java_pattern(self.opts.pattern or "")
        return sorted((t, p) for t, info in md.topics.items()
                      if t not in INTERNAL_TOPICS and regex.search(t)
                      for p in info.partitions)

    def bounds(self, parts: list[TP], *, exact_end: bool = True) -> dict[TP, tuple[int, int]]:
        """``{(topic, partition): (log start, offset after the last record)}``."""
        return self.retried(lambda: log_bounds(self.consumer(), parts, self.timeout,
                                               exact_end=exact_end,
                                               known_ends=self._known_ends))

    def by_timestamp(self, wanted: Mapping[TP, int], bounds: Mapping[TP, tuple[int, int]], *,
                     starting: bool) -> dict[TP, int]:
        """The first offset at or after each timestamp. Where no record is that late: the
        log end for an end; for a start, an error (strategy ``error``) or the log end
        (``latest``)."""
        found = self.retried(lambda: self.consumer().offsets_for_times(
            [TopicPartition(t, p, ts) for (t, p), ts in wanted.items()], timeout=self.timeout))
        out = {}
        for tp in found:
            key = (tp.topic, tp.partition)
            if tp.offset >= 0:
                out[key] = tp.offset
                continue
            if starting and self.opts.timestamp_strategy == "error":
                raise ValueError(
                    f"no offset matched timestamp {wanted[key]} in {tp.topic}-{tp.partition} "
                    "(startingOffsetsByTimestampStrategy=error; set it to 'latest' to start "
                    "such partitions at their end)")
            out[key] = bounds[key][1]
        return out

    def starts(self, parts: list[TP], bounds: Mapping[TP, tuple[int, int]]) -> dict[TP, int]:
        """Concrete start offsets from ``startingTimestamp``, else
        ``startingOffsetsByTimestamp``, else ``startingOffsets`` (Spark's precedence)."""
        opts = self.opts
        if opts.starting_timestamp is not None:
            return self.by_timestamp(dict.fromkeys(parts, opts.starting_timestamp), bounds,
                                     starting=True)
        if opts.starting_by_timestamp:
            wanted = spec_for(opts.starting_by_timestamp, parts,
                              name="startingOffsetsByTimestamp")
            return self.by_timestamp(wanted, bounds, starting=True)
        spec = spec_for(parse_offsets(opts.starting, name="startingOffsets"), parts,
                        name="startingOffsets")
        return {tp: bounds[tp][0] if off == EARLIEST else bounds[tp][1] if off == LATEST
                else off for tp, off in spec.items()}

    def ends(self, parts: list[TP], bounds: Mapping[TP, tuple[int, int]]) -> dict[TP, int]:
        """Batch ends from ``endingTimestamp``, else ``endingOffsetsByTimestamp``, else
        ``endingOffsets`` (``LATEST`` stays symbolic: ``make_ranges`` resolves it)."""
        opts = self.opts
        if opts.ending_timestamp is not None:
            return self.by_timestamp(dict.fromkeys(parts, opts.ending_timestamp), bounds,
                                     starting=False)
        if opts.ending_by_timestamp:
            wanted = spec_for(opts.ending_by_timestamp, parts, name="endingOffsetsByTimestamp")
            return self.by_timestamp(wanted, bounds, starting=False)
        return spec_for(parse_offsets(opts.ending, name="endingOffsets"), parts,
                        name="endingOffsets")

    def batch_ranges(self) -> list[OffsetRange]:
        """The ranges of a batch read (the starting options .. the ending options)."""
        parts = self.partitions()
        bounds = self.bounds(parts)
        starts = self.starts(parts, bounds)
        ends = self.ends(parts, bounds)
        return make_ranges(starts, ends, bounds, fail_on_data_loss=self.opts.fail_on_data_loss)
    def stream_ranges(self, start: Mapping[TP, int], end: Mapping[TP, int],
                      log_starts: Mapping[TP, int] | None = None) -> list[OffsetRange]:
        """The ranges of one micro-batch; a partition new since ``start`` is read from its log
        start. A start before the log start (deleted records) raises ``DataLossError`` unless
        ``failOnDataLoss`` is false, which skips to the log start. ``log_starts``: log starts
        looked up moments ago (the trigger's own look-up) where they cover every partition;
        else they are looked up here."""
        parts = sorted(end)
        new = [tp for tp in parts if tp not in start]
        if log_starts is not None and all(tp in log_starts for tp in parts):
            lows = {tp: log_starts[tp] for tp in parts}
        else:
            lows = {tp: low for tp, (low, _) in self.bounds(parts, exact_end=False).items()}
        out = []
        for tp in parts:
            low = lows[tp]
            s = low if tp in new else start[tp]
            e = end[tp]
            if s < low:
                if self.opts.fail_on_data_loss:
                    raise DataLossError(
                        f"{tp[0]}-{tp[1]}: offsets [{s}, {low}) were deleted before they were "
                        "read (set failOnDataLoss=false to skip them)")
                s = low
            if e > s:
                out.append(OffsetRange(tp[0], tp[1], s, e))
        return out
