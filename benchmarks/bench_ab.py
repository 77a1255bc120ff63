"""A/B of kafka_fast's own produce and consume paths: a BASE commit against this checkout.

BASE is checked out into a git worktree under build/ab/ and its compiled modules are built
there (same virtualenv). Then, on one embedded Tansu, each round runs the produce benchmark
(produce() and produce_batch) and the consume benchmark (poll(), consume(10000) and
consume_batch) of both sides, alternating which side goes first, each side with its own
scripts and PYTHONPATH pointing to its tree (every case in a fresh process, as
benchmarks/bench_produce.py and bench_consume.py run them). The medians over the rounds and
the ratios HEAD/BASE (records/s, client CPU seconds per million records) are printed, and the
run is appended as one JSON line to docs/bench/results/ab.jsonl with both commits, the
machine, the settings, the load average and every round's figures.

    .venv/bin/python benchmarks/bench_ab.py --base 9fe69eb            # 3 rounds of 1M records
    .venv/bin/python benchmarks/bench_ab.py --base 9fe69eb -n 200000 --rounds 1 --no-store
    make bench-ab BASE=9fe69eb

Figures taken while other work runs on the machine are not comparable between runs: such a
run is labelled with ``--loaded`` (and the load averages are stored with every run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka_fast.bench import store  # noqa: E402
from kafka_fast.bench.clients import CLIENT_SETTINGS  # noqa: E402
from kafka_fast.bench.embedded import EmbeddedBroker  # noqa: E402

#: the kafka_fast cases of each script, in table order
CASES = {
    "produce": ("kafka_fast.produce", "kafka_fast.produce_batch"),
    "consume": ("kafka_fast.poll", "kafka_fast.consume", "kafka_fast.consume_batch"),
}
#: partitions of each direction's topics (those of the stored produce and consume tables)
PARTITIONS = {"produce": 6, "consume": 1}


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def prepare_base(commit: str) -> Path:
    """A worktree of ``commit`` under build/ab/ with its compiled modules built."""
    tree = ROOT / "build" / "ab" / commit[:12]
    if not (tree / ".git").exists():
        tree.parent.mkdir(parents=True, exist_ok=True)
        _git("worktree", "add", "--detach", str(tree), commit)
    print(f"# building BASE {commit[:12]} in {tree}", file=sys.stderr, flush=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace", "-j", "2"],
                   cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return tree


def remove_base(tree: Path) -> None:
    _git("worktree", "remove", "--force", str(tree))
    if not any(tree.parent.iterdir()):
        tree.parent.rmdir()


def _side_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    env.pop("KAFKA_FAST_NO_EXTENSIONS", None)
    return env


def check_side(tree: Path) -> None:
    """Fail unless ``tree``'s own compiled kafka_fast is what its processes import."""
    probe = ("import kafka_fast, kafka_fast.records as r; "
             "print(kafka_fast.__file__); print(r.NATIVE)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tree, env=_side_env(tree),
                         check=True, capture_output=True, text=True).stdout.split()
    if Path(out[0]).resolve() != (tree / "kafka_fast" / "__init__.py").resolve() \
            or out[1] != "True":
        raise RuntimeError(f"{tree}: its processes import {out[0]} (compiled: {out[1]})")


def run_side(tree: Path, direction: str, args: argparse.Namespace, bootstrap: str
             ) -> dict[str, dict]:
    """One benchmark script of ``tree`` against ``bootstrap``: case path -> its figures."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    script = tree / "benchmarks" / f"bench_{direction}.py"
    cmd = [sys.executable, str(script), "--bootstrap", bootstrap, "-n", str(args.records),
           "--codecs", args.codecs, "--partitions", str(PARTITIONS[direction]),
           "--clients", ",".join(CASES[direction]), "--no-store", "--json", path]
    if direction == "produce":
        cmd += ["--acks", "1"]
    try:
        subprocess.run(cmd, cwd=tree, env=_side_env(tree), check=True, stdout=subprocess.DEVNULL)
        with open(path, encoding="utf-8") as fh:
            rows = json.load(fh)
    finally:
        os.unlink(path)
    out_rows = {}
    for row in rows:
        if row.get("error"):
            raise RuntimeError(f"{tree.name} {row['path']}: {row['error']}")
        out_rows[f"{direction} {row['path']}"] = {
            "records_per_s": row["records_per_s"], "cpu_s_per_million": row["cpu_s_per_million"]}
    return out_rows


def _drop_topics(bootstrap: str) -> None:
    """Delete the benchmark topics made so far, so the broker's memory stays small."""
    from kafka_fast.admin import AdminClient

    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        names = [t for t in admin.list_topics(timeout=30).topics if t.startswith("bench")]
        if names:
            for future in admin.delete_topics(names, operation_timeout=30).values():
                future.result()


def order(number: int) -> list[str]:
    """Which side runs first in round ``number`` (from 0): BASE, then HEAD, in turn."""
    return ["base", "head"] if number % 2 == 0 else ["head", "base"]


def medians(rounds: list[dict], side: str) -> dict[str, dict]:
    cases = rounds[0][side]
    return {case: {key: statistics.median(r[side][case][key] for r in rounds)
                   for key in ("records_per_s", "cpu_s_per_million")} for case in cases}


def table(base: dict[str, dict], head: dict[str, dict]) -> str:
    lines = [f"{'case':<40}{'BASE rec/s':>13}{'HEAD rec/s':>13}{'x rate':>8}"
             f"{'BASE CPU s/M':>14}{'HEAD CPU s/M':>14}{'x CPU':>8}", "-" * 110]
    for case, b in base.items():
        h = head[case]
        rate = h["records_per_s"] / b["records_per_s"] if b["records_per_s"] else float("nan")
        cpu = (h["cpu_s_per_million"] / b["cpu_s_per_million"] if b["cpu_s_per_million"]
               else float("nan"))
        lines.append(f"{case:<40}{b['records_per_s']:>13,.0f}{h['records_per_s']:>13,.0f}"
                     f"{rate:>8.3f}{b['cpu_s_per_million']:>14.3f}"
                     f"{h['cpu_s_per_million']:>14.3f}{cpu:>8.3f}")
    lines.append("x rate: HEAD/BASE records/s (higher is better); x CPU: HEAD/BASE client CPU "
                 "seconds per million records (lower is better); medians over the rounds.")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--base", required=True, help="the commit to compare against")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of both sides (default 3)")
    ap.add_argument("-n", "--records", type=int, default=1_000_000, help="records per case")
    ap.add_argument("--codecs", default="none", help="comma-separated codecs (default none)")
    ap.add_argument("--results", metavar="DIR", default=str(store.DEFAULT_DIR),
                    help="append the run to DIR/ab.jsonl (default: %(default)s)")
    ap.add_argument("--no-store", action="store_true", help="print only")
    ap.add_argument("--loaded", action="store_true",
                    help="label the stored run as taken on a loaded machine")
    ap.add_argument("--note", default="", help="a remark stored with the run")
    ap.add_argument("--keep", action="store_true",
                    help="keep BASE's worktree under build/ab/ (reused by the next run)")
    args = ap.parse_args()
    if args.rounds < 1 or args.records < 1:
        ap.error("--rounds and --records must be positive")
    try:
        base_commit = _git("rev-parse", "--verify", args.base + "^{commit}")
    except subprocess.CalledProcessError:
        ap.error(f"--base: {args.base!r} is not a commit of this repository")
    head_commit = store.commit(ROOT)
    base_tree = prepare_base(base_commit)
    for tree in (base_tree, ROOT):
        check_side(tree)
    load_before = os.getloadavg()
    rounds: list[dict] = []
    try:
        with EmbeddedBroker() as broker:
            for number in range(args.rounds):
                done: dict = {"round": number + 1, "order": order(number)}
                for side in order(number):
                    tree = base_tree if side == "base" else ROOT
                    figures: dict[str, dict] = {}
                    for direction in ("produce", "consume"):
                        figures.update(run_side(tree, direction, args, broker.bootstrap))
                        _drop_topics(broker.bootstrap)
                    done[side] = figures
                    print(f"# round {number + 1} {side}: " + ", ".join(
                        f"{case} {f['records_per_s']:,.0f} rec/s {f['cpu_s_per_million']:.3f} "
                        "CPU s/M" for case, f in figures.items()), file=sys.stderr, flush=True)
                rounds.append(done)
    finally:
        if not args.keep:
            remove_base(base_tree)
    base, head = medians(rounds, "base"), medians(rounds, "head")
    print(f"\nBASE {base_commit[:12]} vs HEAD {head_commit}: {args.records:,} records of 100 "
          f"bytes (10-byte keys), codecs {args.codecs}, {args.rounds} round(s), "
          f"embedded Tansu, {os.cpu_count()} CPUs\n")
    print(table(base, head))
    if not args.no_store:
        run = {
            "bench": "ab",
            "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "base": {"commit": base_commit[:12], "asked": args.base},
            "head": {"commit": head_commit},
            "machine": store.machine(),
            "broker": "Tansu (embedded)",
            "loaded": args.loaded,
            "load_average": {"before": [round(x, 2) for x in load_before],
                             "after": [round(x, 2) for x in os.getloadavg()]},
            "settings": {"records": args.records, "value_bytes": 100, "key_bytes": 10,
                         "codecs": args.codecs.split(","), "partitions": PARTITIONS,
                         "acks": "1", "rounds": args.rounds, "cases": CASES,
                         "client_settings": CLIENT_SETTINGS,
                         **({"note": args.note} if args.note else {})},
            "rounds": rounds,
            "median": {"base": base, "head": head},
        }
        path = store.append(Path(args.results), run)
        print(f"appended to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
