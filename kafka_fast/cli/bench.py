"""``kafka-fast bench``: kafka_fast and installed peers side by side on one broker."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

from ..config.producer import CODECS
from .options import UsageError

PEERS = ("confluent", "aiokafka", "kafka-python")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` subcommand."""
    p = sub.add_parser("bench", help="produce/consume throughput against peer clients")
    p.add_argument("-b", "--bootstrap", help="broker to use (default: start an embedded one)")
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=100, help="value size in bytes")
    p.add_argument("--key-size", type=int, default=10)
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--compression", default="none",
                   help="comma-separated codecs: " + ",".join(CODECS))
    p.add_argument("--acks", default="1", choices=("0", "1", "all"))
    p.add_argument("--against", default="confluent",
                   help="peer clients to run beside kafka_fast, comma-separated, from "
                        + ", ".join(PEERS) + "; 'none' runs kafka_fast alone (default: "
                        "confluent)")
    p.add_argument("--only", choices=("produce", "consume"), help="run one direction only")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each case this many times and report the median")
    p.add_argument("--case-timeout", type=float, default=900.0, metavar="SECONDS",
                   help="the longest one run of a case may take; past it the case is reported "
                        "as timed out and the next one runs (default: %(default)g)")
    p.add_argument("--plot", metavar="FILE",
                   help="write a PNG bar chart (needs matplotlib; checked before the run)")
    p.add_argument("--json", action="store_true", help="print results as JSON")
    p.set_defaults(run=run)


def _split(text: str, allowed: tuple[str, ...], flag: str, drop: str = "") -> list[str]:
    """The comma-separated names in ``text`` (without ``drop``), each one of ``allowed``."""
    items = [x.strip() for x in text.split(",") if x.strip() and x.strip() != drop]
    bad = [x for x in items if x not in allowed]
    if bad:
        raise UsageError(f"{flag}: unknown {', '.join(bad)} (choose from {', '.join(allowed)})")
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

    if args.records <= 0 or args.size < 0 or args.partitions <= 0 or args.repeat <= 0 \
            or args.case_timeout <= 0:
        raise UsageError("--records, --partitions, --repeat and --case-timeout must be "
                         "positive, --size not negative")
    codecs = _split(args.compression, CODECS, "--compression") or ["none"]
    against = _split(args.against, PEERS, "--against", drop="none")
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
