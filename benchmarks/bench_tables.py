"""The produce and consume tables of README.md and docs/benchmarks.md in one command.

Runs ``benchmarks/bench_produce.py`` and ``benchmarks/bench_consume.py`` on the embedded Tansu
and on one Apache Kafka node as the test harness starts it, every peer at the settings of
docs/bench/settings.md (confluent-kafka's consumer with ``fetch.queue.backoff.ms=0``, the Java
client's perf tools, aiokafka, kafka-python), each case ``--runs`` times in fresh processes
(the median is stored), every case bounded by ``--case-timeout``. Every run is stored with
``--suite tables``; then ``tools/bench_report.py`` regenerates every table, the goals table
and docs/bench/settings.md. The docs blocks show runs of this suite from a clean tree with a
median of at least 3 when there are any.

A tree with uncommitted changes (outside docs/bench/results) is refused: its figures would
not belong to any commit. ``--allow-dirty`` runs anyway; those runs are stored with a
"-dirty" commit, which the tables do not pick.

    .venv/bin/python benchmarks/bench_tables.py                      # 1M records, 3 runs
    .venv/bin/python benchmarks/bench_tables.py --records 1000000 --estimate
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_fast.bench import store  # noqa: E402
from kafka_fast.bench.clients import CASE, CASES  # noqa: E402

SUITE = "tables"
#: the produce cases: every default case and the opt-in switch-interval row the docs discuss
PRODUCE_CASES = [c.name for c in CASES if c.direction == "produce" and c.default] \
    + ["kafka_fast.produce_switch"]
CONSUME_CASES = [c.name for c in CASES if c.direction == "consume" and c.default]
#: the cases that move 30-700k records/s even when quiet: they run ``--peer-records``
SLOW_CASES = ("aiokafka.send", "aiokafka.getmany", "kafka-python.send", "kafka-python.poll",
              "kafka_fast.aio_produce", "confluent.aio_produce", "asyncio.futures")


@dataclass(frozen=True)
class Step:
    """One benchmark script run on one broker."""

    broker: str  # bench_produce/bench_consume --broker
    direction: str
    codecs: tuple[str, ...]
    acks: tuple[str, ...] = ("1",)

    def command(self, args: argparse.Namespace) -> list[str]:
        cases = PRODUCE_CASES if self.direction == "produce" else CONSUME_CASES
        cmd = [sys.executable, str(ROOT / "benchmarks" / f"bench_{self.direction}.py"),
               "--broker", self.broker, "-n", str(args.records), "--repeat", str(args.runs),
               "--codecs", ",".join(self.codecs), "--clients", ",".join(cases),
               "--case-timeout", f"{args.case_timeout:g}", "--suite", SUITE,
               "--results", str(args.results)]
        slow = [name for name in cases if name in SLOW_CASES]
        if slow and args.peer_records < args.records:
            cmd += ["--case-records", ",".join(f"{name}={args.peer_records}" for name in slow)]
        if self.direction == "produce":
            cmd += ["--acks", ",".join(self.acks)]
        if args.note:
            cmd += ["--note", args.note]
        return cmd

    @property
    def label(self) -> str:
        name = {"tansu": "Tansu", "kafka": "Apache Kafka (1 node)"}[self.broker]
        acks = f", acks {','.join(self.acks)}" if self.direction == "produce" else ""
        return f"{self.direction} on {name}, codecs {','.join(self.codecs)}{acks}"


#: what the tables show: Tansu with three codecs (acks=1), one Apache Kafka node with two
#: (produce at acks=1 and acks=all)
STEPS = (
    Step("tansu", "produce", ("none", "lz4", "zstd")),
    Step("tansu", "consume", ("none", "lz4", "zstd")),
    Step("kafka", "produce", ("none", "lz4"), ("1", "all")),
    Step("kafka", "consume", ("none", "lz4")),
)

#: Behind ``--estimate``: seconds a case's process spends besides moving the records (Python
#: and the client's start, the payload, connecting, closing), measured with 2,000-record runs
#: of each case on a loaded 2-core machine and scaled by a third (the machine was running
#: about three other test suites); the JVM's start and, on Tansu, the consumer's group join
#: (about 8 s with a 6 s session timeout) come on top for the Java tools. Check: both Tansu
#: steps at 3,000 records (nearly all fixed cost) took 5.0 min on a shared, busy machine
#: against 5.3 min estimated, so the estimate errs long.
START_S = {"kafka_fast": 1.5, "confluent": 0.8, "aiokafka": 1.2, "kafka-python": 1.2,
           "asyncio": 0.6, "java": 3.0}
JOIN_S = {"tansu": 8.0, "kafka": 1.0}
BROKER_START_S = {"tansu": 1.0, "kafka": 20.0}
#: records/s when no stored run of the case gives one
DEFAULT_RATE = 100_000.0


def stored_rates(results: Path, direction: str, broker: str) -> dict[str, float]:
    """records/s of each case label (client and path, codec included) in the newest stored
    run of ``direction`` on ``broker`` ("tansu" or "kafka": one node), for the estimate."""
    path = results / f"{direction}.jsonl"

    def wanted(run: dict) -> bool:
        name = str(run.get("broker", ""))
        return "hold_objects" not in run.get("settings", {}) and (
            name.startswith("Tansu") if broker == "tansu"
            else name.startswith("Apache") and "(1 node)" in name)

    runs = [r for r in store.load(path) if wanted(r)] if path.exists() else []
    rates: dict[str, float] = {}
    for run in runs:  # oldest first: newer runs replace older figures
        for row in run["results"]:
            if row.get("records_per_s") and not row.get("error"):
                rates[f"{row['client']} {row['path']}"] = float(row["records_per_s"])
    return rates


def estimate_s(step: Step, records: int, peer_records: int, runs: int, results: Path) -> float:
    """Seconds ``step`` takes on a quiet machine: per case and run, its process's fixed
    cost plus its records at the stored rate of that case."""
    rates = stored_rates(results, step.direction, step.broker)
    names = PRODUCE_CASES if step.direction == "produce" else CONSUME_CASES
    total = BROKER_START_S[step.broker]
    for codec in step.codecs:
        multi = len(step.codecs) > 1
        if step.direction == "consume":  # the topic is filled once per codec
            total += START_S["kafka_fast"] + records / rates.get(
                f"kafka_fast produce_batch{f' [{codec}]' if multi else ''}", DEFAULT_RATE)
        for _ack in step.acks:
            for name in names:
                case = CASE[name]
                label = f"{case.client} {case.path}"
                rate = rates.get(f"{label} [{codec}]") or rates.get(label) or DEFAULT_RATE
                fixed = START_S.get(case.client, 1.5)
                if case.client == "java" and step.direction == "consume":
                    fixed += JOIN_S[step.broker]
                n = min(records, peer_records) if name in SLOW_CASES else records
                total += runs * (fixed + n / rate)
    return total


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("-n", "--records", type=int, default=1_000_000,
                    help="records per case (default %(default)s)")
    ap.add_argument("--peer-records", type=int, default=100_000,
                    help="records for the slow peers' cases (" + ", ".join(SLOW_CASES)
                         + "; default %(default)s)")
    ap.add_argument("--runs", type=int, default=3, help="runs per case, median stored (>= 3)")
    ap.add_argument("--case-timeout", type=float, default=300.0, metavar="SECONDS",
                    help="the bound of one run of a case (default %(default)g)")
    ap.add_argument("--only", choices=("tansu", "kafka"), help="one broker only")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="run on a tree with uncommitted changes (stored as -dirty, not shown)")
    ap.add_argument("--estimate", action="store_true", help="print the estimate and stop")
    ap.add_argument("--note", default="", help="a remark stored with each run")
    ap.add_argument("--results", type=Path, default=store.DEFAULT_DIR,
                    help="where runs are stored (the tables are regenerated only from the "
                         "default, %(default)s)")
    args = ap.parse_args(argv)
    if args.records <= 0 or args.peer_records <= 0 or args.case_timeout <= 0:
        ap.error("--records, --peer-records and --case-timeout must be positive")
    if args.runs < 3:
        ap.error("--runs: the tables show medians of at least 3 runs")
    steps = [s for s in STEPS if args.only in (None, s.broker)]
    planned = {s: estimate_s(s, args.records, args.peer_records, args.runs, args.results)
               for s in steps}
    print(f"{len(steps)} steps, {args.records:,} records per case ("
          f"{min(args.records, args.peer_records):,} for the slow peers), {args.runs} runs "
          "each: about "
          f"{_minutes(sum(planned.values()))} on a quiet 2-core machine", flush=True)
    for step, seconds in planned.items():
        print(f"  {step.label}: ~{_minutes(seconds)}", flush=True)
    if args.estimate:
        return 0
    commit = store.commit(ROOT)
    if not commit:
        ap.error("not a git checkout: the stored runs would name no commit")
    if commit.endswith("-dirty") and not args.allow_dirty:
        print("refused: the tree has uncommitted changes (git status); commit them, or pass "
              "--allow-dirty to store runs the tables will not show", file=sys.stderr)
        return 2
    started = time.monotonic()
    failed = []
    for step in steps:
        print(f"\n== {step.label} ({time.monotonic() - started:.0f} s so far)", flush=True)
        status = subprocess.run(step.command(args), cwd=ROOT).returncode
        if status:
            failed.append(f"{step.label} (exit status {status})")
    report = 0
    if args.results.resolve() == store.DEFAULT_DIR.resolve():
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        report = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_report.py")],
                                cwd=ROOT, env=env).returncode
    else:  # the docs show docs/bench/results only
        print(f"stored in {args.results}; README/docs tables not regenerated", flush=True)
    print(f"\n{len(steps)} steps in {_minutes(time.monotonic() - started)} at commit {commit}"
          + (f"; failed: {'; '.join(failed)}" if failed else "")
          + ("; tools/bench_report.py failed" if report else ""), flush=True)
    return 1 if failed or report else 0


if __name__ == "__main__":
    sys.exit(main())
