"""Summarise a test run's timeline (``KAFKA_FAST_TEST_TIMELINE=<file> make test``).

Prints the run's span, each worker's busy time, how busy the machine's CPUs were over the
span (from the /proc/stat readings stored with each phase: near 100% means more workers would
not shorten the run, well below means the run waits), and the files that kept workers longest.

    python tools/test_timeline.py timeline.jsonl [--top 25]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def summary(rows: list[dict], top: int) -> list[str]:
    """The report's lines for the phases in ``rows``."""
    if not rows:
        return ["no phases in the timeline"]
    start = min(r["start"] for r in rows)
    stop = max(r["stop"] for r in rows)
    lines = [f"span {(stop - start) / 60:.1f} min, {len({r['test'] for r in rows}):,} tests"]
    workers: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for r in rows:
        workers[r["worker"]] += r["stop"] - r["start"]
        files[r["test"].split("::", 1)[0]] += r["stop"] - r["start"]
    lines += [f"  {w}: busy {busy / 60:.1f} min" for w, busy in sorted(workers.items())]
    cpu = sorted((r["stop"], r["cpu_busy"], r["cpu_total"]) for r in rows if r.get("cpu_total"))
    if len(cpu) >= 2 and cpu[-1][2] > cpu[0][2]:
        share = (cpu[-1][1] - cpu[0][1]) / (cpu[-1][2] - cpu[0][2])
        lines.append(f"machine CPUs busy {share:.0%} of the time between the first and the "
                     "last phase reported")
    lines.append(f"files by time spent in their tests (top {top}):")
    lines += [f"  {secs:7.0f} s  {name}" for name, secs in files.most_common(top)]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.timeline.read_text().splitlines() if line]
    print("\n".join(summary(rows, args.top)))


if __name__ == "__main__":
    main()
