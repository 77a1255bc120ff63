"""``kafka-fast produce``: records from stdin or files, split as kcat splits them, or JSON
records (``--format json``), with a delivery summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from .connect import connect, connect_config
from .jsonrecord import RecordError, decode_record
from .kcatfmt import parse_delim
from .options import (
    INT64_MAX,
    UsageError,
    add_common,
    arg_bytes,
    client_config,
    in_range,
    seconds,
    want_progress,
)
from .output import emit_summary
from .progress import Progress
from .splitter import Oversize, split_records

if TYPE_CHECKING:
    from ..producer import Producer

Headers = list[tuple[str, bytes | None]]
Record = tuple[bytes | None, bytes | None, Headers]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``produce`` subcommand."""
    p = sub.add_parser(
        "produce", help="produce records from stdin or files",
        description="Produce records. Input is split as kcat splits it: at -D (default "
                    "newline), empty records skipped, bytes kept exactly (no \\r stripping). "
                    "Each FILE is one record unless -l. kcat flags: -K -k -D -Z -l -H -p -z -c "
                    "-q -F -X.")
    add_common(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-K", dest="key_delimiter", metavar="DELIM",
                   help="split each record into key and value at the first DELIM "
                        "(no DELIM: null key, the whole record is the value)")
    p.add_argument("-k", dest="fixed_key", metavar="KEY",
                   help="key for every record (a key split off with -K takes precedence)")
    p.add_argument("-D", dest="delimiter", default="\\n", metavar="DELIM",
                   help="record delimiter in the input (default \\n; escapes \\n \\t \\xNN, as "
                        "kcat's)")
    p.add_argument("-Z", dest="empty_is_null", action="store_true",
                   help="send an empty key or value (with -K) as null")
    p.add_argument("-l", dest="lines", action="store_true",
                   help="read the one FILE record by record, as stdin is read")
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="NAME=VALUE",
                   help="header added to every record (repeatable; NAME alone: a null value)")
    p.add_argument("-p", "--partition", type=int, default=-1)
    p.add_argument("-z", "--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    p.add_argument("-c", "--count", type=int, help="stop after COUNT records")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: split as above; json: one JSON record per line "
                        '({"key","value","headers"}; binary as {"base64": ...}, as '
                        "consume --format json writes it)")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds to wait for the cluster and for final deliveries")
    p.add_argument("file", nargs="*", help="input files (default: stdin)")
    p.set_defaults(run=run)


class BadInput(Exception):
    """An input record that cannot be produced: ``where`` names it, ``why`` says why."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where = where


def _static_headers(items: list[str]) -> Headers:
    headers: Headers = []
    for item in items:
        name, sep, value = item.partition("=")
        if not name:
            raise UsageError(f"-H expects NAME=VALUE (or NAME for a null value), got {item!r}")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"-H: a header name is text (UTF-8), got {arg_bytes(name)!r}"
                             ) from None
        headers.append((name, arg_bytes(value) if sep else None))
    return headers


class TooLarge:
    """An input record over ``message.max.bytes``, skipped without being held: ``size`` is
    its size as produce() counts it (key + value + headers)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class Reader:
    """Turns the input into records by the command's options. A record longer than ``limit``
    (the producer's ``message.max.bytes``) is never held whole: it comes as ``TooLarge``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.key_delim = parse_delim(args.key_delimiter) if args.key_delimiter else None
        self.delim = parse_delim(args.delimiter)
        if not self.delim:
            raise UsageError("-D must not be empty")
        self.fixed_key = arg_bytes(args.fixed_key) if args.fixed_key is not None else None
        self.static = _static_headers(args.headers)
        self.static_size = sum(len(name) + len(value or b"") for name, value in self.static)
        if args.lines and len(args.file) != 1:
            raise UsageError("-l reads exactly one FILE")

    def records(self, limit: int) -> Iterator[Record | TooLarge]:
        """Every record of the input, in order; BadInput names a record that is not one.
        A text record whose size as produce() counts it would exceed ``limit`` comes as
        ``TooLarge``."""
        args = self.args
        if not args.file:
            yield from self._split(sys.stdin.buffer, "stdin", self.delim, limit)
            return
        for path in args.file:
            with _open(path) as stream:
                if args.lines or args.format == "json":
                    yield from self._split(stream, path, self.delim, limit)
                else:  # the whole file is one record, even an empty one
                    yield next(self._split(stream, path, None, limit), self._text(b""))

    def _split(self, stream: BinaryIO, name: str, delim: bytes | None, limit: int
               ) -> Iterator[Record | TooLarge]:
        if self.args.format != "json":
            # Over this, a record fails produce()'s size check whatever -K takes off it.
            limit += len(self.key_delim or b"")
            for raw in split_records(stream, delim, limit, self.key_delim):
                if isinstance(raw, Oversize):
                    yield TooLarge(self._size(raw))
                else:
                    yield self._text(raw)
            return
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                key, value, headers = decode_record(line)
            except RecordError as exc:
                raise BadInput(f"{name} line {number}", str(exc)) from None
            yield key, value, self.static + headers

    def _size(self, skipped: Oversize) -> int:
        """The key + value + headers size of a skipped record, as produce() counts it."""
        if self.key_delim is not None and skipped.key_split:
            return skipped.length - len(self.key_delim) + self.static_size
        return skipped.length + len(self.fixed_key or b"") + self.static_size

    def _text(self, raw: bytes) -> Record:
        key = self.fixed_key
        value: bytes | None = raw
        if self.key_delim is not None:
            head, sep, tail = raw.partition(self.key_delim)
            if sep:
                key, value = head, tail
                if self.args.empty_is_null and not key:
                    key = None
        if self.args.empty_is_null and not value:
            value = None
        return key, value, self.static


class Tally:
    """What became of the records: read, handed to the producer, delivered, failed. Each
    record is counted once: delivered, failed by its delivery report, failed by produce()
    itself, or (after close) failed for having no report at all."""

    def __init__(self) -> None:
        self.records = 0     # input records, skipped ones included
        self.bytes = 0       # key + value bytes handed to produce()
        self.queued = 0      # records produce() took
        self.delivered = 0
        self.failed = 0
        self.reported_failed = 0
        self.first_error: str | None = None

    def on_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.reported_failed += 1
            self.fail(str(err))

    def fail(self, error: str) -> None:
        """One record failed with ``error``."""
        self.failed += 1
        if self.first_error is None:
            self.first_error = error

    def settle(self, why: str) -> None:
        """Count the records that got no report as failed (``why``); call after close."""
        unreported = self.queued - self.delivered - self.reported_failed
        if unreported > 0:
            self.failed += unreported
            self.reported_failed += unreported
            self.first_error = self.first_error or f"{unreported} records {why}"

    def summary(self) -> dict[str, Any]:
        return {"records": self.records, "bytes": self.bytes, "delivered": self.delivered,
                "failed": self.failed, "first_error": self.first_error}


def _check(args: argparse.Namespace) -> None:
    seconds(args.timeout)
    in_range(args.count, "-c", 0, INT64_MAX)


def run(args: argparse.Namespace) -> int:
    """Produce every input record; exit 1 if any record failed or an input was bad."""
    from .. import KafkaError, Producer
    from ..config import make_config

    _check(args)
    reader = Reader(args)
    conf = client_config(args)
    connect_config(conf, args.timeout)
    if args.compression:
        conf["compression.type"] = args.compression
    conf.setdefault("message.timeout.ms", int(args.timeout * 1000))
    limit = make_config(conf, "producer")["message.max.bytes"]
    tally = Tally()
    producer = Producer(conf)
    bad: BadInput | None = None
    try:
        connect(producer, args, conf, args.topic)
        with Progress(f"producing to {args.topic}", args.count,
                      want_progress(args)) as progress:
            try:
                for record in reader.records(limit) if args.count != 0 else ():
                    tally.records += 1
                    if isinstance(record, TooLarge):
                        _too_large(tally, KafkaError.of(
                            KafkaError.MSG_SIZE_TOO_LARGE,
                            f"Broker: Message size too large: record of {record.size} bytes "
                            f"exceeds message.max.bytes={limit}"))
                    else:
                        _produce(producer, args, record, tally)
                    progress.advance()
                    if args.count is not None and tally.records >= args.count:
                        break
            except BadInput as exc:
                bad = exc
            remaining = producer.flush(args.timeout)
            if remaining:
                tally.first_error = tally.first_error or (
                    f"{remaining} records not delivered within {args.timeout:g}s")
    finally:
        producer.close(0)
    tally.settle("got no delivery report")
    stats = tally.summary()
    if bad is not None:
        stats["bad_input"] = bad.where
    emit_summary(args, "produced", stats, sys.stdout if args.json else sys.stderr)
    if bad is not None:
        print(f"kafka-fast produce: stopped at {bad}; {tally.delivered} of the "
              f"{tally.records} records before it were delivered"
              + (f", {tally.failed} failed" if tally.failed else ""), file=sys.stderr)
        return 1
    return 1 if tally.failed else 0


def _produce(producer: Producer, args: argparse.Namespace, record: Record,
             tally: Tally) -> None:
    """Hand one record to produce() (its checks decide); a record over message.max.bytes
    fails alone, as a skipped one does, and the input goes on."""
    from .. import KafkaError, KafkaException

    key, value, headers = record
    while True:
        try:
            producer.produce(args.topic, value=value, key=key, partition=args.partition,
                             headers=headers or None, on_delivery=tally.on_delivery)
            break
        except BufferError:
            producer.poll(0.1)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() != KafkaError.MSG_SIZE_TOO_LARGE:
                raise
            _too_large(tally, err)
            return
    tally.queued += 1
    tally.bytes += len(value or b"") + len(key or b"")
    producer.poll(0)


def _too_large(tally: Tally, err: Any) -> None:
    """The current record is over message.max.bytes: said on stderr, counted as failed."""
    print(f"kafka-fast produce: {err.name()}: {err.str()} (input record {tally.records}, "
          "skipped)", file=sys.stderr)
    tally.fail(str(err))


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
