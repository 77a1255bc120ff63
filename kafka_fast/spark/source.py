"""Options of the ``kafka_fast`` Spark data source and their resolution into offset ranges.

Option names and meanings follow Spark's built-in Kafka source: ``kafka.*`` options go to
the kafka_fast client with the prefix stripped; exactly one of ``subscribe``,
``subscribePattern`` and ``assign`` picks the partitions. Streaming offsets are the JSON
shape Spark's source uses, ``{"topic": {"0": 23}}`` (next offset to read per partition).
Errors name the option at fault.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
#: Options the source knows, lower case (Spark hands them over case-insensitively).
SOURCE_OPTIONS = {
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "startingtimestamp", "startingoffsetsbytimestamp", "failondataloss", "includeheaders",
    "minpartitions", "maxoffsetspertrigger", "polltimeoutms", "kafkaconsumer.polltimeoutms",
    "path",
}
#: Spark's Kafka source options this source accepts and ignores (they tune its JVM client).
IGNORED_OPTIONS = {
    "fetchoffset.numretries", "fetchoffset.retryintervalms", "groupidprefix",
    "maxtriggerdelay", "minoffsetspertrigger", "startingoffsetsbytimestampstrategy",
    "endingtimestamp", "endingoffsetsbytimestamp",
}


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


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower(), options.get(name))
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"option '{name}' must be a positive integer, got {raw!r}")
    return value


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
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_offsets_per_trigger: int | None = None
    poll_timeout_ms: int = 120_000


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Check and parse the reader's options; raises ``ValueError`` naming the bad option."""
    lowered = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(k for k in lowered if not k.startswith("kafka.")
                     and k not in SOURCE_OPTIONS and k not in IGNORED_OPTIONS)
    if unknown:
        raise ValueError(f"unknown option(s) {unknown} for the kafka_fast source")
    conf = kafka_conf(lowered)
    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if lowered.get(k)]
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
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"option 'subscribePattern' is not a regular expression: {exc}"
                             ) from None
    else:
        assign = _parse_assign(lowered["assign"])
    if streaming and "endingoffsets" in lowered:
        raise ValueError("option 'endingOffsets' is not valid in streaming queries")
    starting = lowered.get("startingoffsets", "latest" if streaming else "earliest")
    ending = lowered.get("endingoffsets", "latest")
    parse_offsets(starting, name="startingOffsets")
    parse_offsets(ending, name="endingOffsets")
    if not streaming:
        check_specs(parse_offsets(starting, name="startingOffsets"),
                    parse_offsets(ending, name="endingOffsets"))
    ts = lowered.get("startingtimestamp")
    starting_timestamp = None
    if ts is not None:
        try:
            starting_timestamp = int(ts)
        except ValueError:
            raise ValueError(f"option 'startingTimestamp' must be epoch milliseconds, got {ts!r}"
                             ) from None
    by_ts = {}
    if lowered.get("startingoffsetsbytimestamp"):
        by_ts = _parse_timestamps(lowered["startingoffsetsbytimestamp"])
    poll = lowered.get("kafkaconsumer.polltimeoutms", lowered.get("polltimeoutms"))
    return SourceOptions(
        conf=conf, subscribe=subscribe, pattern=pattern, assign=assign,
        starting=starting, ending=ending, starting_timestamp=starting_timestamp,
        starting_by_timestamp=by_ts,
        fail_on_data_loss=_bool(lowered, "failOnDataLoss", True),
        include_headers=_bool(lowered, "includeHeaders", False),
        min_partitions=_positive_int(lowered, "minPartitions"),
        max_offsets_per_trigger=_positive_int(lowered, "maxOffsetsPerTrigger"),
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
    if not isinstance(spec, Mapping) or not all(
            isinstance(ps, list) and all(isinstance(p, int) for p in ps) for ps in spec.values()):
        raise ValueError(f"option 'assign' must be JSON like {{\"topicA\": [0, 1]}}, got {text!r}")
    return tuple(sorted((t, p) for t, ps in spec.items() for p in ps))


def _parse_timestamps(text: str) -> dict[TP, int]:
    spec = _json_option(text, "startingOffsetsByTimestamp")
    try:
        return {(t, int(p)): int(ts) for t, ps in spec.items() for p, ts in ps.items()}
    except (AttributeError, TypeError, ValueError):
        raise ValueError("option 'startingOffsetsByTimestamp' must be JSON like "
                         f"{{\"topic\": {{\"0\": 1700000000000}}}}, got {text!r}") from None


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
    """Ends moved back so at most ``limit`` records are read in total, shared in proportion to
    what each partition has (as Spark's ``maxOffsetsPerTrigger``); always makes progress."""
    sizes = {tp: max(0, end[tp] - start.get(tp, end[tp])) for tp in end}
    total = sum(sizes.values())
    if total <= limit:
        return dict(end)
    out = {tp: start.get(tp, end[tp]) + sizes[tp] * limit // total for tp in end}
    left = limit - sum(out[tp] - start.get(tp, end[tp]) for tp in end)
    for tp in sorted(end, key=lambda tp: -sizes[tp]):
        if left <= 0:
            break
        if out[tp] < end[tp]:
            out[tp] += 1
            left -= 1
    return out


class Resolver:
    """Driver-side look-ups for one source: which partitions, where their logs start and end,
    and what the offset options mean in offsets. Holds one probe consumer until ``close``."""

    def __init__(self, opts: SourceOptions, timeout: float = 30.0) -> None:
        self.opts = opts
        self.timeout = timeout
        self._consumer: Any = None

    def consumer(self) -> Any:
        if self._consumer is None:
            from ..consumer import Consumer
            from .reader import reader_config

            # the end of each partition is found by reading until an empty fetch reports it
            self._consumer = Consumer({**reader_config(self.opts.conf),
                                       "enable.partition.eof": True, "fetch.wait.max.ms": 10})
        return self._consumer

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def partitions(self) -> list[TP]:
        """The partitions the source reads now (a pattern is matched against every topic)."""
        if self.opts.assign:
            return list(self.opts.assign)
        if self.opts.subscribe:
            return topic_partitions(self.consumer(), self.opts.subscribe, self.timeout)
        md = self.consumer().list_topics(timeout=self.timeout)
        regex = re.compile(self.opts.pattern or "")
        return sorted((t, p) for t, info in md.topics.items() if regex.fullmatch(t)
                      for p in info.partitions)

    def bounds(self, parts: list[TP], *, exact_end: bool = True) -> dict[TP, tuple[int, int]]:
        """``{(topic, partition): (log start, offset after the last record)}``."""
        return log_bounds(self.consumer(), parts, self.timeout, exact_end=exact_end)

    def starts(self, parts: list[TP], bounds: Mapping[TP, tuple[int, int]]) -> dict[TP, int]:
        """Concrete start offsets from ``startingOffsetsByTimestamp`` / ``startingTimestamp``
        (first record at or after it; the log end if none) or ``startingOffsets``."""
        opts = self.opts
        if opts.starting_by_timestamp or opts.starting_timestamp is not None:
            if opts.starting_by_timestamp:
                wanted = spec_for(opts.starting_by_timestamp, parts,
                                  name="startingOffsetsByTimestamp")
            else:
                at = opts.starting_timestamp
                assert at is not None
                wanted = dict.fromkeys(parts, at)
            found = self.consumer().offsets_for_times(
                [TopicPartition(t, p, ts) for (t, p), ts in wanted.items()],
                timeout=self.timeout)
            return {(tp.topic, tp.partition): tp.offset if tp.offset >= 0
                    else bounds[(tp.topic, tp.partition)][1] for tp in found}
        spec = spec_for(parse_offsets(opts.starting, name="startingOffsets"), parts,
                        name="startingOffsets")
        return {tp: bounds[tp][0] if off == EARLIEST else bounds[tp][1] if off == LATEST
                else off for tp, off in spec.items()}

    def batch_ranges(self) -> list[OffsetRange]:
        """The ranges of a batch read (``startingOffsets`` .. ``endingOffsets``)."""
        parts = self.partitions()
        bounds = self.bounds(parts)
        starts = self.starts(parts, bounds)
        ends = spec_for(parse_offsets(self.opts.ending, name="endingOffsets"), parts,
                        name="endingOffsets")
        return make_ranges(starts, ends, bounds, fail_on_data_loss=self.opts.fail_on_data_loss)

    def stream_ranges(self, start: Mapping[TP, int], end: Mapping[TP, int]) -> list[OffsetRange]:
        """The ranges of one micro-batch; a partition new since ``start`` is read from its log
        start. A start before the log start (deleted records) raises ``DataLossError`` unless
        ``failOnDataLoss`` is false, which skips to the log start."""
        parts = sorted(end)
        new = [tp for tp in parts if tp not in start]
        lows = self.bounds(parts, exact_end=False)
        out = []
        for tp in parts:
            low = lows[tp][0]
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
