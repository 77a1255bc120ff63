"""The command line of ``benchmarks/bench_produce.py`` and ``benchmarks/bench_consume.py``.

The run options (broker, records, sizes, partitions, codecs, repeat) are
``kafka_fast.bench.options``, the same definition ``kafka-fast bench`` uses; the cases, the
stored results and the held objects are the scripts' own.

Both run the cases of one direction through ``kafka_fast.bench.runner.run_all`` (the engine
``kafka-fast bench`` uses too) on one broker (an embedded Tansu unless ``--bootstrap`` is given),
print the shared table and store the run with ``kafka_fast.bench.store``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafka_fast.bench import java, store
from kafka_fast.bench.clients import CASES, CLIENT_SETTINGS
from kafka_fast.bench.options import add_run_options, check_run_options
from kafka_fast.bench.result import Result
from kafka_fast.bench.runner import BenchConfig, available, format_table, run_all


@dataclass
class Broker:
    """The broker under test: its address, its process (for its CPU time) and how to make a
    topic on it (None: kafka_fast's AdminClient)."""

    bootstrap: str
    pid: int | None = None
    create_topic: Callable[[str, int], None] | None = None
    name: str = ""


@contextmanager
def given_or_embedded(bootstrap: str | None) -> Iterator[Broker]:
    """``bootstrap`` if given, else an embedded Tansu for the duration."""
    if bootstrap:
        yield Broker(bootstrap, name=bootstrap)
        return
    from kafka_fast.bench.embedded import EmbeddedBroker

    with EmbeddedBroker() as embedded:
        yield Broker(embedded.bootstrap, embedded.pid, name="Tansu (embedded)")


def parser(doc: str, direction: str, records: int, partitions: int) -> argparse.ArgumentParser:
    """The options both scripts take; ``doc`` is the script's docstring."""
    names = [case.name for case in CASES if case.direction == direction]
    defaults = [case.name for case in CASES if case.direction == direction and case.default]
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=doc.split("\n\n", 1)[1] if "\n\n" in doc else None)
    add_run_options(ap, records=records, partitions=partitions, codecs="none,lz4,zstd")
    ap.add_argument("--clients", default=",".join(defaults),
                    help="cases to run, comma-separated, from: " + ", ".join(names))
    ap.add_argument("--case-records", default="", metavar="CASE=N[,CASE=N...]",
                    help="fewer (or more) records for these cases than -n: the slow peers "
                         "(their CPU per record and rate do not depend on the count); rows "
                         "keep their own record count")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    ap.add_argument("--json", metavar="FILE", help="also write the results here")
    ap.add_argument("--results", metavar="DIR", default=str(store.DEFAULT_DIR),
                    help="append this run as a JSON line to DIR/<direction>.jsonl "
                         "(default: %(default)s)")
    ap.add_argument("--no-store", action="store_true",
                    help="do not append the run to the stored results")
    ap.add_argument("--note", default="", help="a remark stored with the run")
    ap.add_argument("--suite", default="",
                    help="a name stored with the run (settings.suite) that docs blocks select "
                         "by (benchmarks/bench_tables.py stores 'tables')")
    ap.add_argument("--hold", default="0", metavar="N[,N...]",
                    help="each case's process first makes and keeps N 100-byte bytes objects "
                         "of its own (a host application's data); several values run every "
                         "case at each, side by side; rows say '+N held'")
    return ap


def parse_args(ap: argparse.ArgumentParser, direction: str,
               argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and check ``argv`` (default: the command line; usage errors exit through
    ``ap``); ``codecs`` and ``cases`` come back as lists."""
    args = ap.parse_args(argv)
    try:
        args.codecs = check_run_options(args)
    except ValueError as exc:
        ap.error(str(exc))
    try:
        args.holds = [int(h) for h in args.hold.split(",") if h.strip()] or [0]
    except ValueError:
        ap.error(f"--hold: comma-separated counts, not {args.hold!r}")
    if any(h < 0 for h in args.holds):
        ap.error("--hold: counts must not be negative")
    try:
        args.case_records = {name.strip(): int(count) for name, count in
                             (item.split("=", 1) for item in args.case_records.split(",")
                              if item.strip())}
    except ValueError:
        ap.error(f"--case-records: CASE=N, comma-separated, not {args.case_records!r}")
    if any(n <= 0 for n in args.case_records.values()):
        ap.error("--case-records: counts must be positive")
    known = {case.name: case for case in CASES if case.direction == direction}
    args.cases = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [name for name in [*args.cases, *args.case_records] if name not in known]
    if unknown or not args.cases:
        ap.error(f"--clients: unknown {','.join(unknown) or '(none given)'} "
                 f"(choose from {','.join(known)})")
    missing = [name for name in args.cases if not available(known[name].client)]
    for name in missing:
        client = known[name].client
        need = java.missing() if client == "java" else f"{client} is not installed"
        print(f"skipped {name}: {need}", file=sys.stderr)
    if len(missing) == len(args.cases):
        ap.error("none of the cases asked for can run")
    return args


def run(args: argparse.Namespace, direction: str, broker: Broker,
        acks: Sequence[str] = ("1",)) -> int:
    """Run the cases once per ``acks`` value and print a table for each. Exit status 1 if a
    kafka_fast case failed."""
    rows: list[dict] = []
    failed = False
    held = [h for h in args.holds if h]
    for ack in acks:
        title = (f"{direction}: {args.records:,} records, {args.size}-byte values, "
                 f"{args.key_size}-byte keys, {args.partitions} partition(s), acks={ack}, "
                 f"codecs {','.join(args.codecs)}, broker {broker.name or broker.bootstrap}, "
                 f"{os.cpu_count()} CPUs"
                 + (f", client processes holding {' or '.join(f'{h:,}' for h in args.holds)} "
                    "objects of their own" if held else ""))
        print(f"# {title}", file=sys.stderr, flush=True)
        results = []
        for hold in args.holds:
            cfg = BenchConfig(bootstrap=broker.bootstrap, records=args.records, size=args.size,
                              key_size=args.key_size, partitions=args.partitions,
                              compressions=args.codecs, acks=ack, directions=(direction,),
                              repeat=args.repeat, broker_pid=broker.pid,
                              create_topic=broker.create_topic, cases=args.cases, hold=hold,
                              case_timeout_s=args.case_timeout,
                              case_records=args.case_records)
            results += run_all(cfg, _progress)
        rows += [dict(r.as_dict(), acks=ack) for r in results]
        failed = failed or any(r.error for r in results if r.client == "kafka_fast")
        print(f"\n{'## ' if args.markdown else ''}{title}\n", flush=True)
        print(format_table(results, markdown=args.markdown), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    if not args.no_store:
        settings = {"records": args.records, "value_bytes": args.size,
                    "key_bytes": args.key_size, "partitions": args.partitions,
                    "codecs": args.codecs, "acks": list(acks), "repeat": args.repeat,
                    "case_timeout_s": args.case_timeout, "cases": args.cases,
                    "client_settings": CLIENT_SETTINGS}
        if held:
            settings["hold_objects"] = ",".join(str(h) for h in args.holds)
        if args.note:
            settings["note"] = args.note
        if args.suite:
            settings["suite"] = args.suite
        if args.case_records:
            settings["case_records"] = args.case_records
        path = store.append(Path(args.results), store.record(
            direction, broker.name or broker.bootstrap, settings, rows))
        print(f"appended to {path}", file=sys.stderr)
    return 1 if failed else 0


def _progress(result: Result) -> None:
    error = f"  {result.remark}" if result.remark else ""
    print(f"  {result.direction} {result.label}: {result.records_per_s:,.0f} rec/s, "
          f"{result.cpu_per_million:.2f} CPU s/M{error}", file=sys.stderr, flush=True)
