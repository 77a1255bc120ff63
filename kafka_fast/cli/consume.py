"""``kafka-fast consume``: write records to stdout as raw bytes (kcat's default, ``-f``,
``-K``/``-D``), kcat's ``-J`` envelope, or the JSON record shape (``--format json``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .connect import connect, connect_config
from .jsonrecord import encode_record
from .kcatfmt import (
    KcatFormat,
    delimited_format,
    envelope_delimiter,
    kcat_envelope,
    parse_delim,
    parse_format,
)
from .logend import log_end_offsets
from .options import (
    INT32_MAX,
    INT64_MAX,
    UsageError,
    add_common,
    client_config,
    in_range,
    seconds,
    want_progress,
)
from .output import emit_summary, status
from .progress import Progress
from .serdes import DeserializeError, add_serdes_option, parse_serdes

if TYPE_CHECKING:
    from ..consumer import Consumer

log = logging.getLogger("kafka_fast.cli")

OFFSET_HELP = ("beginning | end | stored | OFFSET | -N (the last N per partition) | "
               "s@TIMESTAMP_MS (first record at or after) | e@TIMESTAMP_MS (stop before); "
               "repeat -o to give a start and e@")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``consume`` subcommand."""
    p = sub.add_parser(
        "consume", help="consume records and write them to stdout",
        description="Consume records. Keys, values and headers are written as the exact "
                    "bytes they are. kcat flags: -G -p -o -c -e -f -K -D -J -Z -s -u -q -F -X.")
    add_common(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-G", "--group", help="join this consumer group (commits on exit)")
    p.add_argument("-p", "--partition", type=int, help="only this partition (without -G)")
    p.add_argument("-o", "--offset", action="append", default=None, help=OFFSET_HELP)
    p.add_argument("-c", "--count", type=int, help="exit after COUNT records")
    p.add_argument("-e", "--exit-at-end", action="store_true",
                   help="exit when every partition has been read to its end")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: kcat's output (-f/-K/-D); json: one JSON record per line "
                        '({"key","value","headers",...}, binary as {"base64": ...}), read '
                        "back by produce --format json")
    p.add_argument("-f", dest="fmt", metavar="FORMAT",
                   help="kcat format string: %%t %%p %%o %%k %%s %%S %%K %%R %%T %%h %%%%, "
                        "escapes \\n \\r \\t \\0 \\\\ \\xNN")
    p.add_argument("-K", dest="key_delimiter", metavar="DELIM",
                   help="print each key before its value, followed by DELIM (kcat -K)")
    p.add_argument("-D", dest="delimiter", default="\\n", metavar="DELIM",
                   help="written after each record (kcat -D; default \\n)")
    p.add_argument("-J", dest="envelope", action="store_true",
                   help="kcat's JSON envelope (topic, partition, offset, tstype, ts, broker, "
                        "headers, key, payload), each followed by -D (or -f's leading text)")
    p.add_argument("-Z", dest="null_text", action="store_true",
                   help='print null (and, as kcat, empty) keys and values as "NULL" instead '
                        "of nothing (kcat -Z)")
    add_serdes_option(p)
    p.add_argument("-u", dest="unbuffered", action="store_true",
                   help="write each record out at once (default: when idle and at the end)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds to wait for the cluster to answer")
    p.set_defaults(run=run)


class Offsets:
    """The parsed ``-o`` options: a start (kind, number) and an optional stop timestamp."""

    def __init__(self, items: list[str] | None) -> None:
        self.kind, self.number = "beginning", 0
        self.stop_ts: int | None = None
        starts = 0
        for text in items or ["beginning"]:
            if text.startswith("e@"):
                self.stop_ts = _number(text[2:], text, "-o e@TIMESTAMP_MS")
                continue
            starts += 1
            self.kind, self.number = parse_offset(text)
        if starts > 1:
            raise UsageError("-o: give at most one start offset (and optionally e@TIMESTAMP)")


def _number(text: str, whole: str, what: str) -> int:
    """The number of an -o option; UsageError naming it (``what``) when it is not one or is
    out of Kafka's 64-bit range."""
    try:
        number = int(text)
    except ValueError:
        raise UsageError(f"-o expects {OFFSET_HELP.split(';')[0]}, got {whole!r}") from None
    if not -INT64_MAX <= number <= INT64_MAX or (number < 0 and what != "-o OFFSET"):
        raise UsageError(f"{what} must be between {0 if what != '-o OFFSET' else -INT64_MAX} "
                         f"and {INT64_MAX}, got {whole!r}")
    return number


def parse_offset(text: str) -> tuple[str, int]:
    """A start ``-o`` as (kind, number): beginning/end/stored, absolute, last-N or s@time."""
    if text in ("beginning", "end", "stored"):
        return text, 0
    if text.startswith("s@"):
        return "time", _number(text[2:], text, "-o s@TIMESTAMP_MS")
    number = _number(text, text, "-o OFFSET")
    return ("last", -number) if number < 0 else ("absolute", number)


class Printer:
    """Writes records to a binary stream in the chosen output form."""

    def __init__(self, args: argparse.Namespace, out: Any) -> None:
        key_serde, value_serde = parse_serdes(args.serdes)
        null = b"NULL" if args.null_text else b""
        self.envelope = args.envelope
        self.json = args.format == "json"
        if args.fmt is not None:
            parts = parse_format(args.fmt)
        else:
            parts = delimited_format(args.key_delimiter, args.delimiter)
        self.kcat = KcatFormat(parts, null, key_serde, value_serde)
        self.envelope_end = envelope_delimiter(
            parts if args.fmt is not None else parse_format(parse_delim(args.delimiter)))
        self.out = out
        self.unbuffered = args.unbuffered
        self.leaders: dict[int, int] = {}

    def set_leaders(self, leaders: dict[int, int]) -> None:
        """Partition leaders, for the ``broker`` field of -J."""
        self.leaders = leaders

    def write(self, msg: Any) -> None:
        if self.envelope:
            self.out.write(kcat_envelope(msg, self.leaders.get(msg.partition(), -1))
                           + self.envelope_end)
        elif self.json:
            self.out.write(encode_record(msg).encode() + b"\n")
        else:
            try:
                self.out.write(self.kcat.render(msg))
            except DeserializeError as exc:
                raise _Stop(f"cannot deserialize the record at {msg.topic()} "
                            f"[{msg.partition()}] offset {msg.offset()}: {exc}") from None
        if self.unbuffered:
            self.out.flush()


def _partitions(meta: Any, args: argparse.Namespace) -> list[int]:
    topic = meta.topics.get(args.topic)
    if topic is None or topic.error is not None and not topic.partitions:
        raise UsageError(f"topic {args.topic!r} does not exist")
    if args.partition is not None:
        if args.partition not in topic.partitions:
            raise UsageError(f"topic {args.topic!r} has no partition {args.partition}")
        return [args.partition]
    return sorted(topic.partitions)


def _assignment(consumer: Consumer, conf: dict, args: argparse.Namespace, partitions: list[int],
                offsets: Offsets) -> list:
    from .. import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, TopicPartition

    tps = [TopicPartition(args.topic, p) for p in partitions]
    kind, number = offsets.kind, offsets.number
    if kind == "end":
        ends = log_end_offsets(conf, consumer, args.topic, partitions, args.timeout)
        for tp in tps:
            tp.offset = ends[tp.partition]
    elif kind == "last":
        ends = log_end_offsets(conf, consumer, args.topic, partitions, args.timeout)
        for tp in tps:
            marks = consumer.get_watermark_offsets(tp, timeout=args.timeout)
            assert marks is not None  # None comes only from cached=True
            low = marks[0]
            tp.offset = max(low, ends[tp.partition] - number)
    elif kind == "time":
        found = consumer.offsets_for_times(
            [TopicPartition(args.topic, p, number) for p in partitions], timeout=args.timeout)
        by_partition = {tp.partition: tp.offset for tp in found}
        for tp in tps:
            tp.offset = by_partition[tp.partition] if by_partition[tp.partition] >= 0 \
                else OFFSET_END
    else:
        for tp in tps:
            tp.offset = {"beginning": OFFSET_BEGINNING,
                         "stored": OFFSET_STORED}.get(kind, number)
    return tps


class Window:
    """Which consumed records are written, by the ``-o`` options: holds back the last N of a
    partition until its end (-N), skips records before the start time (s@; a broker may
    answer the time look-up with the start of a batch), and ends a partition at e@."""

    def __init__(self, offsets: Offsets, partitions: set[int] | None) -> None:
        self.offsets = offsets
        self.expected = partitions
        self.tail: dict[int, deque] = {}
        if offsets.kind == "last" and partitions is not None:
            self.tail = {p: deque(maxlen=offsets.number) for p in partitions}
        self.at_end: set[int] = set()
        self.stopped: set[int] = set()
        self.started: set[int] = set()

    def record(self, msg: Any) -> list[Any]:
        """The records to write now that ``msg`` arrived."""
        p, ts = msg.partition(), msg.timestamp()[1]
        if self.offsets.kind == "time" and p not in self.started:
            if ts < self.offsets.number:
                return []
            self.started.add(p)
        if self.offsets.stop_ts is not None and ts >= self.offsets.stop_ts:
            self.stopped.add(p)
            return []
        if p in self.tail:
            self.tail[p].append(msg)
            return []
        return [msg]

    def end_of(self, partition: int) -> list[Any]:
        """The records to write now that ``partition`` reached its end."""
        self.at_end.add(partition)
        return list(self.tail.pop(partition, ()))

    def stopped_at(self, partition: int) -> bool:
        return partition in self.stopped

    def done(self, assigned: Callable[[], set[int]], exit_at_end: bool) -> bool:
        """Every partition (``assigned()`` when in a group) is past e@, or (with -e) at its
        end."""
        expected = self.expected if self.expected is not None else assigned()
        finished = self.stopped | (self.at_end if exit_at_end else set())
        return bool(expected) and finished >= expected


class GroupJoin:
    """Says on stderr that the consumer is joining its group and when it has joined; with
    ``-o end``, starts partitions the group has no offset for at the true end of the log
    (the client's ``auto.offset.reset=latest`` trusts ListOffsets, inexact on Tansu)."""

    def __init__(self, args: argparse.Namespace, conf: dict[str, Any], at_end: bool) -> None:
        self.args = args
        self.conf = conf
        self.at_end = at_end
        self.started = time.monotonic()
        self.assigned: list | None = None
        status(args, f"joining group {args.group!r} for {args.topic}")

    def on_assign(self, consumer: Consumer, partitions: list) -> None:
        self.assigned = list(partitions)
        if not self.at_end or not partitions:
            return
        committed = consumer.committed(partitions, timeout=self.args.timeout)
        fresh = [tp.partition for tp in committed if tp.offset < 0]
        if fresh:
            ends = log_end_offsets(self.conf, consumer, self.args.topic, fresh,
                                   self.args.timeout)
            for tp in committed:
                if tp.offset < 0:
                    tp.offset = ends[tp.partition]
            consumer.assign(committed)

    def report(self) -> None:
        """Print the assignment once it has come (called from the poll loop)."""
        if self.assigned is None:
            return
        parts = ",".join(str(tp.partition) for tp in self.assigned)
        self.assigned = None
        status(self.args, f"joined group {self.args.group!r} after "
                          f"{time.monotonic() - self.started:.1f}s: assigned "
                          f"{self.args.topic} [{parts}]")


def _check(args: argparse.Namespace, offsets: Offsets) -> None:
    in_range(args.partition, "-p", 0, INT32_MAX)
    in_range(args.count, "-c", 0, INT64_MAX)
    seconds(args.timeout)
    if args.group and args.partition is not None:
        raise UsageError("-p cannot be combined with -G (the group assigns partitions)")
    if args.group and offsets.kind not in ("beginning", "end", "stored"):
        raise UsageError("with -G, -o takes beginning, end or stored (the group's offsets)")
    if args.envelope and args.format == "json":
        raise UsageError("-J cannot be combined with --format json")


def _consumer_config(args: argparse.Namespace, offsets: Offsets) -> dict[str, Any]:
    conf = client_config(args)
    connect_config(conf, args.timeout)
    conf.setdefault("group.id", args.group or f"kafka-fast-cli-{os.getpid()}")
    conf.setdefault("enable.auto.commit", bool(args.group))
    conf["enable.partition.eof"] = True
    if args.group and offsets.kind in ("beginning", "end"):
        conf.setdefault("auto.offset.reset", "earliest" if offsets.kind == "beginning"
                        else "latest")
    return conf


def run(args: argparse.Namespace) -> int:
    """Consume until -c/-e/e@ says stop or Ctrl+C; commit on exit when in a group."""
    from .. import Consumer, KafkaError

    offsets = Offsets(args.offset)
    _check(args, offsets)
    out = sys.stdout.buffer
    printer = Printer(args, out)
    conf = _consumer_config(args, offsets)
    consumer = Consumer(conf)
    stats = {"records": 0, "bytes": 0}
    joining: GroupJoin | None = None
    try:
        meta = connect(consumer, args, conf, args.topic)
        partitions = _partitions(meta, args)
        printer.set_leaders({p.id: p.leader
                             for p in meta.topics[args.topic].partitions.values()})
        if args.group:
            joining = GroupJoin(args, conf, offsets.kind == "end")
            consumer.subscribe([args.topic], on_assign=joining.on_assign)
            window = Window(offsets, None)
        else:
            tps = _assignment(consumer, conf, args, partitions, offsets)
            consumer.assign(tps)
            window = Window(offsets, {tp.partition for tp in tps})
        with Progress(f"consuming {args.topic}", args.count, want_progress(args)) as progress:
            while args.count is None or stats["records"] < args.count:
                msg = consumer.poll(0.5)
                if joining is not None:
                    joining.report()
                if msg is None:
                    out.flush()
                    continue
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    raise _Stop(str(err))
                partition = msg.partition()
                assert partition is not None  # records and end-of-partition events have one
                if err is not None:
                    ready = window.end_of(partition)
                else:
                    ready = window.record(msg)
                    if window.stopped_at(partition):
                        consumer.pause([_tp(msg)])
                for held in ready[:None if args.count is None
                                  else args.count - stats["records"]]:
                    _emit(printer, held, stats, progress)
                if (err is not None or window.stopped_at(partition)) and window.done(
                        lambda: {tp.partition for tp in consumer.assignment()},
                        args.exit_at_end):
                    break
        out.flush()
    except KeyboardInterrupt:
        pass
    except _Stop as stop:
        print(f"kafka-fast consume: {stop.args[0]}", file=sys.stderr)
        return 1
    finally:
        if args.group:
            try:
                consumer.commit(asynchronous=False)
            except Exception:  # nothing consumed or nothing new to commit
                log.debug("final commit before close failed", exc_info=True)
        consumer.close()
    emit_summary(args, "consumed", stats)
    return 0


class _Stop(Exception):
    """A consume error that ends the run."""


def _tp(msg: Any) -> Any:
    from .. import TopicPartition

    return TopicPartition(msg.topic(), msg.partition())


def _emit(printer: Printer, msg: Any, stats: dict, progress: Progress) -> None:
    printer.write(msg)
    stats["records"] += 1
    stats["bytes"] += len(msg.value() or b"") + len(msg.key() or b"")
    progress.advance()
