"""``kafka-fast produce``: one record per input line (or JSON lines), with a delivery summary."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from .options import UsageError, add_common, client_config, want_progress
from .output import emit_summary
from .progress import Progress

Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``produce`` subcommand."""
    p = sub.add_parser("produce", help="produce records from a file or stdin, one per line")
    add_common(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-K", dest="key_delimiter", metavar="DELIM",
                   help="split each line into key and value at the first DELIM")
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="NAME=VALUE",
                   help="header added to every record (repeatable)")
    p.add_argument("-p", "--partition", type=int, default=-1)
    p.add_argument("-z", "--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help='text: one value per line; json: {"key","value","headers"} per line')
    p.add_argument("--timeout", type=float, default=30.0,
                   help="seconds to wait for the cluster and for final deliveries")
    p.add_argument("file", nargs="?", default="-", help="input file (default: stdin)")
    p.set_defaults(run=run)


def _static_headers(items: list[str]) -> list[tuple[str, bytes | None]]:
    headers = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"-H expects NAME=VALUE, got {item!r}")
        headers.append((name, value.encode()))
    return headers


def _json_field(obj: dict, name: str) -> bytes | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":")).encode()


def _json_headers(obj: dict, number: int) -> list[tuple[str, bytes | None]]:
    raw = obj.get("headers") or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    out = []
    for pair in pairs:
        try:
            name, value = pair
        except (TypeError, ValueError):
            raise UsageError(
                f"line {number}: headers must be an object or [name, value] pairs") from None
        out.append((str(name), None if value is None else str(value).encode()))
    return out


def read_records(stream: BinaryIO, args: argparse.Namespace,
                 static: list[tuple[str, bytes | None]]) -> Iterator[Record]:
    """Yield ``(key, value, headers)`` for each input line; ``static`` headers go on all."""
    delim = args.key_delimiter.encode() if args.key_delimiter else None
    for number, line in enumerate(stream, 1):
        line = line.rstrip(b"\r\n")
        if args.format == "json":
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise UsageError(f"line {number}: not valid JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise UsageError(f"line {number}: expected a JSON object")
            yield (_json_field(obj, "key"), _json_field(obj, "value"),
                   static + _json_headers(obj, number))
        elif delim is not None:
            key, sep, value = line.partition(delim)
            if not sep:
                raise UsageError(f"line {number}: no key delimiter {args.key_delimiter!r}")
            yield key, value, static
        else:
            yield None, line, static


def run(args: argparse.Namespace) -> int:
    """Produce every input record; exit 1 if any delivery failed."""
    from .. import Producer

    conf = client_config(args)
    static = _static_headers(args.headers)
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

    stream = sys.stdin.buffer if args.file == "-" else _open(args.file)
    producer = Producer(conf)
    try:
        producer.list_topics(args.topic, timeout=args.timeout)
        with Progress(f"producing to {args.topic}", None, want_progress(args)) as progress:
            for key, value, headers in read_records(stream, args, static):
                while True:
                    try:
                        producer.produce(args.topic, value=value, key=key,
                                         partition=args.partition, headers=headers or None,
                                         on_delivery=on_delivery)
                        break
                    except BufferError:
                        producer.poll(0.1)
                stats["records"] += 1
                stats["bytes"] += len(value or b"") + len(key or b"")
                progress.advance()
                producer.poll(0)
            remaining = producer.flush(args.timeout)
    finally:
        producer.close()
        if stream is not sys.stdin.buffer:
            stream.close()
    if remaining:
        stats["failed"] += remaining
        stats["first_error"] = stats["first_error"] or f"{remaining} records not delivered in time"
    emit_summary(args, "produced", stats)
    return 1 if stats["failed"] else 0


def _open(path: str) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
