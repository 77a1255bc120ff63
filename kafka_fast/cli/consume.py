"""``kafka-fast consume``: print records as text, JSON or a kcat-style format string."""

from __future__ import annotations

import argparse
import os
import sys
from collections import deque
from typing import Any

from .options import UsageError, add_common, client_config, want_progress
from .output import KcatFormat, emit_summary, message_json
from .progress import Progress


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``consume`` subcommand."""
    p = sub.add_parser("consume", help="consume records and print them")
    add_common(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-G", "--group", help="join this consumer group (commits on exit)")
    p.add_argument("-p", "--partition", type=int, help="only this partition (without -G)")
    p.add_argument("-o", "--offset", default="beginning",
                   help="beginning | end | stored | OFFSET | -N (last N per partition)")
    p.add_argument("-c", "--count", type=int, help="exit after COUNT records")
    p.add_argument("-e", "--exit-at-end", action="store_true",
                   help="exit when every partition has been read to its end")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("-f", dest="fmt", metavar="FORMAT",
                   help="kcat format string: %%t %%p %%o %%k %%s %%S %%K %%T %%h, \\n \\t")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds to wait for the cluster to answer")
    p.set_defaults(run=run)


def parse_offset(text: str) -> tuple[str, int]:
    """``-o`` as (kind, number): beginning/end/stored, absolute, or last-N."""
    if text in ("beginning", "end", "stored"):
        return text, 0
    try:
        number = int(text)
    except ValueError:
        raise UsageError(
            f"-o expects beginning, end, stored, OFFSET or -N, got {text!r}") from None
    return ("last", -number) if number < 0 else ("absolute", number)


class Printer:
    """Writes records in the chosen output form."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.kcat = KcatFormat(args.fmt) if args.fmt else None
        self.json = args.format == "json" or args.json
        self.out = sys.stdout

    def write(self, msg: Any) -> None:
        if self.kcat is not None:
            self.out.write(self.kcat.render(msg))
        elif self.json:
            self.out.write(message_json(msg) + "\n")
        else:
            value = msg.value()
            self.out.write(("" if value is None else value.decode("utf-8", "replace")) + "\n")


def _assignment(consumer: Any, args: argparse.Namespace, kind: str, number: int) -> list:
    from .. import OFFSET_BEGINNING, OFFSET_END, OFFSET_STORED, TopicPartition

    meta = consumer.list_topics(args.topic, timeout=args.timeout)
    topic = meta.topics.get(args.topic)
    if topic is None or topic.error is not None and not topic.partitions:
        raise UsageError(f"topic {args.topic!r} does not exist")
    partitions = sorted(topic.partitions)
    if args.partition is not None:
        if args.partition not in topic.partitions:
            raise UsageError(f"topic {args.topic!r} has no partition {args.partition}")
        partitions = [args.partition]
    tps = []
    for p in partitions:
        tp = TopicPartition(args.topic, p)
        if kind == "last":
            low, high = consumer.get_watermark_offsets(tp, timeout=args.timeout)
            tp.offset = max(low, high - number)
        else:
            tp.offset = {"beginning": OFFSET_BEGINNING, "end": OFFSET_END,
                         "stored": OFFSET_STORED}.get(kind, number)
        tps.append(tp)
    return tps


def run(args: argparse.Namespace) -> int:
    """Consume until -c/-e says stop or Ctrl+C; commit on exit when in a group."""
    from .. import Consumer, KafkaError

    kind, number = parse_offset(args.offset)
    if args.group and args.partition is not None:
        raise UsageError("-p cannot be combined with -G (the group assigns partitions)")
    conf = client_config(args)
    conf.setdefault("group.id", args.group or f"kafka-fast-cli-{os.getpid()}")
    conf.setdefault("enable.auto.commit", bool(args.group))
    conf["enable.partition.eof"] = True
    if args.group and kind in ("beginning", "end"):
        conf.setdefault("auto.offset.reset", "earliest" if kind == "beginning" else "latest")
    printer = Printer(args)
    consumer = Consumer(conf)
    stats = {"records": 0, "bytes": 0}
    tail: dict[int, deque] = {}
    at_end: set[int] = set()
    try:
        if args.group:
            consumer.subscribe([args.topic])
            expected = None
        else:
            tps = _assignment(consumer, args, kind, number)
            consumer.assign(tps)
            expected = {tp.partition for tp in tps}
            if kind == "last":
                tail = {tp.partition: deque(maxlen=number) for tp in tps}
        with Progress(f"consuming {args.topic}", args.count, want_progress(args)) as progress:
            while args.count is None or stats["records"] < args.count:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise _Stop(err)
                    at_end.add(msg.partition())
                    if msg.partition() in tail:
                        for held in tail.pop(msg.partition()):
                            _emit(printer, held, stats, progress)
                    done = expected is not None and at_end >= expected
                    if args.exit_at_end and (done or (expected is None and _group_done(
                            consumer, at_end))):
                        break
                    continue
                if msg.partition() in tail:
                    tail[msg.partition()].append(msg)
                    continue
                _emit(printer, msg, stats, progress)
    except KeyboardInterrupt:
        pass
    except _Stop as stop:
        print(f"error: {stop.args[0]}", file=sys.stderr)
        return 1
    finally:
        sys.stdout.flush()
        if args.group:
            try:
                consumer.commit(asynchronous=False)
            except Exception:  # nothing consumed or nothing new to commit
                pass
        consumer.close()
    emit_summary(args, "consumed", stats)
    return 0


class _Stop(Exception):
    """A consume error that ends the run."""


def _group_done(consumer: Any, at_end: set[int]) -> bool:
    assigned = {tp.partition for tp in consumer.assignment()}
    return bool(assigned) and at_end >= assigned


def _emit(printer: Printer, msg: Any, stats: dict, progress: Progress) -> None:
    printer.write(msg)
    stats["records"] += 1
    stats["bytes"] += msg.len()
    progress.advance()
