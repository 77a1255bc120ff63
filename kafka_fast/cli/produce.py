"""``kafka-fast produce``: records from stdin or files, split as kcat splits them, or JSON
records (``--format json``), with a delivery summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from .connect import connect, connect_config
from .jsonrecord import RecordError, decode_record
from .kcatfmt import unescape
from .options import UsageError, add_common, client_config, want_progress
from .output import emit_summary
from .progress import Progress

if TYPE_CHECKING:
    from ..producer import Producer

Headers = list[tuple[str, bytes | None]]
Record = tuple[bytes | None, bytes | None, Headers]
CHUNK = 1 << 16


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
                   help="record delimiter in the input (default \\n; escapes \\t \\r \\xNN)")
    p.add_argument("-Z", dest="empty_is_null", action="store_true",
                   help="send an empty key or value (with -K) as null")
    p.add_argument("-l", dest="lines", action="store_true",
                   help="read the one FILE record by record, as stdin is read")
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="NAME=VALUE",
                   help="header added to every record (repeatable)")
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
        if not sep or not name:
            raise UsageError(f"-H expects NAME=VALUE, got {item!r}")
        headers.append((name, value.encode()))
    return headers


def split_records(stream: BinaryIO, delim: bytes) -> Iterator[bytes]:
    """The records of ``stream`` separated by ``delim``, empty ones skipped (as kcat)."""
    if delim == b"\n":
        for line in stream:
            line = line[:-1] if line.endswith(b"\n") else line
            if line:
                yield line
        return
    rest = b""
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        parts = (rest + chunk).split(delim)
        rest = parts.pop()
        yield from (p for p in parts if p)
    if rest:
        yield rest


class Reader:
    """Turns the input into records by the command's options."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.key_delim = unescape(args.key_delimiter) if args.key_delimiter else None
        self.delim = unescape(args.delimiter)
        if not self.delim:
            raise UsageError("-D must not be empty")
        self.fixed_key = args.fixed_key.encode() if args.fixed_key is not None else None
        self.static = _static_headers(args.headers)
        if args.lines and len(args.file) != 1:
            raise UsageError("-l reads exactly one FILE")

    def records(self) -> Iterator[Record]:
        """Every record of the input, in order; BadInput names a record that is not one."""
        args = self.args
        if not args.file:
            yield from self._split(sys.stdin.buffer, "stdin")
            return
        for path in args.file:
            with _open(path) as stream:
                if args.lines or args.format == "json":
                    yield from self._split(stream, path)
                else:
                    yield self._text(stream.read())

    def _split(self, stream: BinaryIO, name: str) -> Iterator[Record]:
        if self.args.format != "json":
            for raw in split_records(stream, self.delim):
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


def run(args: argparse.Namespace) -> int:
    """Produce every input record; exit 1 if any delivery failed or an input was bad."""
    from .. import Producer

    reader = Reader(args)
    conf = client_config(args)
    connect_config(conf, args.timeout)
    if args.compression:
        conf["compression.type"] = args.compression
    conf.setdefault("message.timeout.ms", int(args.timeout * 1000))
    stats: dict[str, Any] = {"records": 0, "bytes": 0, "delivered": 0, "failed": 0,
                             "first_error": None}

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            stats["delivered"] += 1
        else:
            stats["failed"] += 1
            if stats["first_error"] is None:
                stats["first_error"] = str(err)

    producer = Producer(conf)
    bad: BadInput | None = None
    remaining = 0
    try:
        connect(producer, args, conf, args.topic)
        with Progress(f"producing to {args.topic}", args.count,
                      want_progress(args)) as progress:
            try:
                for key, value, headers in reader.records():
                    _produce(producer, args, key, value, headers, on_delivery)
                    stats["records"] += 1
                    stats["bytes"] += len(value or b"") + len(key or b"")
                    progress.advance()
                    if args.count is not None and stats["records"] >= args.count:
                        break
            except BadInput as exc:
                bad = exc
            remaining = producer.flush(args.timeout)
    finally:
        producer.close()
    if remaining:
        stats["failed"] += remaining
        stats["first_error"] = stats["first_error"] or f"{remaining} records not delivered in time"
    if bad is not None:
        stats["bad_input"] = bad.where
    emit_summary(args, "produced", stats, sys.stdout if args.json else sys.stderr)
    if bad is not None:
        print(f"kafka-fast produce: stopped at {bad}; {stats['delivered']} of the "
              f"{stats['records']} records before it were delivered"
              + (f", {stats['failed']} failed" if stats["failed"] else ""), file=sys.stderr)
        return 1
    return 1 if stats["failed"] else 0


def _produce(producer: Producer, args: argparse.Namespace, key: bytes | None,
             value: bytes | None, headers: Headers, on_delivery: Any) -> None:
    while True:
        try:
            producer.produce(args.topic, value=value, key=key, partition=args.partition,
                             headers=headers or None, on_delivery=on_delivery)
            break
        except BufferError:
            producer.poll(0.1)
    producer.poll(0)


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
