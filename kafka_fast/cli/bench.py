"""``kafka-fast bench``: kafka_fast and installed peers side by side on one broker."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

from ..bench.options import add_run_options, check_run_options
from .options import UsageError

PEERS = ("confluent", "aiokafka", "kafka-python")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` subcommand."""
    p = sub.add_parser("bench", help="produce/consume throughput against peer clients")
    add_run_options(p, records=200_000, partitions=3)
    p.add_argument("--acks", default="1", choices=("0", "1", "all"))
    p.add_argument("--against", default="confluent",
                   help="peer clients to run beside kafka_fast, comma-separated, from "
                        + ", ".join(PEERS) + "; 'none' runs kafka_fast alone (default: "
                        "confluent)")
    p.add_argument("--only", choices=("produce", "consume"), help="run one direction only")
    p.add_argument("--plot", metavar="FILE",
                   help="write a PNG bar chart (needs matplotlib; checked before the run)")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.set_defaults(run=run)


def _peers(text: str) -> list[str]:
    """The peers named in ``--against`` (without ``none``), each one of ``PEERS``."""
    items = [x.strip() for x in text.split(",") if x.strip() and x.strip() != "none"]
    bad = [x for x in items if x not in PEERS]
    if bad:
        raise UsageError(f"--against: unknown {', '.join(bad)} (choose from {', '.join(PEERS)})")
    return items


def check_plot_path(path: str) -> None:
    """UsageError unless a PNG can be written at ``path`` (and matplotlib is installed)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib (pip install 'kafka_fast[demo]')")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageError(f"--plot {path}: is a directory, give a file name")
    if not os.path.isdir(folder):
        raise UsageError(f"--plot {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path)
                                          and not os.access(path, os.W_OK)):
        raise UsageError(f"--plot {path}: not writable")


def settings_line(args: argparse.Namespace, codecs: list[str], broker: str) -> str:
    """The run's settings, for the chart title."""
    return (f"{args.records:,} records of {args.size} B (keys {args.key_size} B), "
            f"{args.partitions} partitions, acks={args.acks}, compression "
            f"{','.join(codecs)}, repeat {args.repeat}, {broker}, {os.cpu_count()} CPUs")


def run(args: argparse.Namespace) -> int:
    """Run the benchmark (starting an embedded broker when no bootstrap is given)."""
    from ..bench import BenchConfig, run_all
    from ..bench.embedded import EmbeddedBroker, EmbeddedBrokerError
    from ..bench.runner import format_table, plot

    try:
        codecs = check_run_options(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    against = _peers(args.against)
    if args.plot:
        check_plot_path(args.plot)
    from ..bench.runner import available

    for peer in [p for p in against if not available(p)]:
        print(f"skipped {peer}: not installed", file=sys.stderr)
    directions = (args.only,) if args.only else ("produce", "consume")
    broker = None
    bootstrap = args.bootstrap
    if not bootstrap:
        try:
            broker = EmbeddedBroker().start()
        except EmbeddedBrokerError as exc:
            raise UsageError(str(exc)) from None
        bootstrap = broker.bootstrap
        if not args.json:
            print(f"embedded broker (Tansu) on {bootstrap}", file=sys.stderr)
    cfg = BenchConfig(bootstrap=bootstrap, records=args.records, size=args.size,
                      key_size=args.key_size, partitions=args.partitions, compressions=codecs,
                      acks=args.acks, against=against, directions=directions,
                      repeat=args.repeat, broker_pid=broker.pid if broker else None,
                      case_timeout_s=args.case_timeout)

    def progress(result) -> None:
        if not args.json:
            print(f"  {result.direction} {result.label}: {result.records_per_s:,.0f} rec/s",
                  file=sys.stderr)

    try:
        results = run_all(cfg, progress)
    finally:
        if broker is not None:
            broker.stop()
    if args.json:
        print(json.dumps([r.as_dict() for r in results]))
    else:
        print(format_table(results))
    if args.plot:
        plot(results, args.plot, settings_line(
            args, codecs, f"broker {args.bootstrap}" if args.bootstrap else "embedded Tansu"))
        if not args.json:
            print(f"chart written to {args.plot}", file=sys.stderr)
    return 1 if any(r.error for r in results if r.client == "kafka_fast") else 0
