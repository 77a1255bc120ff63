"""The benchmark's run options, defined once for both of its command lines: ``kafka-fast
bench`` (``cli/bench.py``) and the scripts of ``benchmarks/`` (``benchmarks/command.py``).

Each entry point adds what only it has (the CLI its peers, chart and JSON output; the scripts
their cases, stored results and acks lists) to a parser made by ``add_run_options``, and
``check_run_options`` checks the shared ones the same way for both.
"""

from __future__ import annotations

import argparse

from ..config.producer import CODECS


def add_run_options(ap: argparse.ArgumentParser, *, records: int, partitions: int,
                    codecs: str = "none") -> None:
    """The broker, the records and the codecs of a run, with these defaults."""
    ap.add_argument("-b", "--bootstrap",
                    help="an existing broker (default: start an embedded Tansu)")
    ap.add_argument("-n", "--records", type=int, default=records, help="records per case")
    ap.add_argument("--size", type=int, default=100, help="value size in bytes")
    ap.add_argument("--key-size", type=int, default=10, help="key size in bytes")
    ap.add_argument("--partitions", type=int, default=partitions)
    ap.add_argument("--compression", "--codecs", dest="compression", default=codecs,
                    help="comma-separated codecs, one table section each: " + ",".join(CODECS))
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per case; the median by records/s is reported")
    ap.add_argument("--case-timeout", type=float, default=900.0, metavar="SECONDS",
                    help="the longest one run of a case may take (its process start "
                         "included); past it the case is recorded as timed out, its other "
                         "runs skipped, and the next case runs (default: %(default)g)")


def check_run_options(args: argparse.Namespace) -> list[str]:
    """The codecs asked for; ``ValueError`` naming the option when one is out of range."""
    if args.records <= 0 or args.partitions <= 0 or args.repeat <= 0 \
            or args.case_timeout <= 0:
        raise ValueError("--records, --partitions, --repeat and --case-timeout must be "
                         "positive")
    if args.size < 0 or args.key_size < 0:
        raise ValueError("--size and --key-size must not be negative")
    codecs = [c.strip() for c in args.compression.split(",") if c.strip()]
    bad = [c for c in codecs if c not in CODECS]
    if bad:
        raise ValueError(f"--compression: unknown {', '.join(bad)} "
                         f"(choose from {', '.join(CODECS)})")
    if not codecs:
        raise ValueError(f"--compression: no codec given (choose from {', '.join(CODECS)})")
    return codecs
