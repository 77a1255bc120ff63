"""The broker-version compatibility table of docs/compatibility.md, from the outcomes the
matrix tests (tests/compat/test_broker_matrix.py) wrote.

    python tools/broker_matrix.py --store    # a complete run's outcomes -> docs/compatibility.json,
                                             # then the table in docs/compatibility.md
    python tools/broker_matrix.py --check    # this run's outcomes agree with the stored table
    python tools/broker_matrix.py --render   # only rewrite the table from docs/compatibility.json

The outcomes are read from ``--results`` (default: tests/compat/matrix.py's results_dir(),
``KAFKA_FAST_MATRIX_RESULTS`` or build/broker-matrix). A run is complete when every feature
of the matrix has an outcome on every release of the pom's ``kafka.matrix.versions``: passed
(with exact records or offsets compared) where the release serves the feature, "unsupported"
(the client's error shown) where it does not. ``make test`` runs ``--check`` after the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT / "tests", ROOT / "tests" / "compat"):
    sys.path.insert(0, str(_p))

from harness.apache_kafka import apache_kafka_missing, matrix_versions  # noqa: E402
from matrix import (  # noqa: E402
    FEATURES,
    PASSED,
    UNSUPPORTED,
    read_results,
    results_dir,
    supported,
)

STORED = ROOT / "docs" / "compatibility.json"
DOC = ROOT / "docs" / "compatibility.md"
BEGIN, END = "<!-- broker-matrix -->", "<!-- /broker-matrix -->"
TEST = "tests/compat/test_broker_matrix.py"


class MatrixError(ValueError):
    """A run's outcomes do not make a complete, passing matrix (the message lists why)."""


def problems(cells: dict[tuple[str, str], dict], versions: list[str]) -> list[str]:
    """Why ``cells`` is not a complete, passing run of the matrix (empty when it is)."""
    found = []
    for f in FEATURES:
        for v in versions:
            cell = cells.get((f.id, v))
            want = PASSED if supported(f.id, v) else UNSUPPORTED
            if cell is None:
                found.append(f"{f.id} on Kafka {v}: no outcome (the test did not run)")
            elif cell["outcome"] != want:
                found.append(f"{f.id} on Kafka {v}: {cell['outcome']}, expected {want}"
                             + (f" ({cell['detail']})" if cell.get("detail") else ""))
            elif want == PASSED and cell["records"] + cell["offsets"] == 0:
                found.append(f"{f.id} on Kafka {v}: passed without exact records or offsets")
    known = {(f.id, v) for f in FEATURES for v in versions}
    found.extend(f"{fid} on Kafka {v}: not in the matrix"
                 for fid, v in sorted(set(cells) - known))
    return found


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, check=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def stored_run(cells: dict[tuple[str, str], dict], versions: list[str]) -> dict[str, Any]:
    """The document stored in docs/compatibility.json for a complete run."""
    bad = problems(cells, versions)
    if bad:
        raise MatrixError("incomplete or failing matrix run:\n  " + "\n  ".join(bad))
    last = max(c["at"] for c in cells.values())
    return {
        "date": last[:10], "commit": _commit(), "versions": versions,
        "cells": [{k: cells[(f.id, v)][k] for k in ("feature", "version", "outcome", "records",
                                                     "offsets", "test")}
                  for f in FEATURES for v in versions],
    }


def render(run: dict[str, Any]) -> str:
    """The Markdown table (feature x release) of a stored run."""
    versions = run["versions"]
    by_cell = {(c["feature"], c["version"]): c for c in run["cells"]}
    lines = ["| feature | " + " | ".join(f"Kafka {v}" for v in versions) + " |",
             "| --- |" + " --- |" * len(versions)]
    for f in FEATURES:
        row = []
        for v in versions:
            cell = by_cell[(f.id, v)]
            if cell["outcome"] == PASSED:
                row.append("tested")
            else:
                row.append(f"not supported by that broker: {f.note}" if f.note
                           else "not supported by that broker")
        lines.append(f"| {f.title} | " + " | ".join(row) + " |")
    compared = sum(c["records"] for c in run["cells"])
    offsets = sum(c["offsets"] for c in run["cells"])
    lines.append("")
    lines.append(f"Run of {run['date']} at commit `{run['commit']}`: {len(run['cells'])} "
                 f"cells from `{TEST}`, {compared:,} records and {offsets:,} offsets "
                 "compared exactly. \"tested\": the test passed on that release; \"not "
                 "supported by that broker\": the release lacks the feature and the test "
                 "showed the client's error instead.")
    return "\n".join(lines)


def rewrite(doc: Path, table: str) -> bool:
    """Replace the block between the markers of ``doc``; True when it changed."""
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise MatrixError(f"{doc} has no {BEGIN} ... {END} block")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{table}\n{END}{tail}"
    if new != text:
        doc.write_text(new)
        return True
    return False


def check(cells: dict[tuple[str, str], dict], run: dict[str, Any],
          versions: list[str]) -> list[str]:
    """Where this run's outcomes disagree with the stored table (empty when they agree)."""
    found = problems(cells, versions)
    if run["versions"] != versions:
        found.append(f"the stored table covers {run['versions']}, the pom {versions}: "
                     "run tools/broker_matrix.py --store")
    stored = {(c["feature"], c["version"]): c["outcome"] for c in run["cells"]}
    found.extend(f"{fid} on Kafka {v}: stored {stored.get((fid, v))}, this run {c['outcome']}"
                 for (fid, v), c in sorted(cells.items())
                 if (fid, v) in stored and stored[(fid, v)] != c["outcome"])
    return found


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--store", action="store_true")
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--render", action="store_true")
    parser.add_argument("--results", type=Path, default=None)
    parser.add_argument("--stored", type=Path, default=STORED)
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    versions = matrix_versions()
    results = args.results or results_dir()
    try:
        if args.render:
            rewrite(args.doc, render(json.loads(args.stored.read_text())))
            return 0
        cells = read_results(results)
        if args.check and not cells:
            print(f"broker_matrix: no outcomes in {results}: the matrix tests did not run "
                  "(Apache Kafka's jars missing? run tools/fetch_kafka.sh)")
            return 1 if _ci() else 0
        if args.store:
            run = stored_run(cells, versions)
            args.stored.write_text(json.dumps(run, indent=1) + "\n")
            rewrite(args.doc, render(run))
            print(f"broker_matrix: stored {len(run['cells'])} cells in {args.stored}, "
                  f"table in {args.doc}")
            return 0
        bad = check(cells, json.loads(args.stored.read_text()), versions)
        absent = [v for v in versions if apache_kafka_missing(v) is not None]
        if absent and not _ci():
            # Those tests skipped, each saying what to install; only their cells go unchecked.
            print(f"broker_matrix: Kafka {', '.join(absent)} not available here, "
                  "not checked (run tools/fetch_kafka.sh)")
            bad = [b for b in bad if not any(b.startswith(f"{f.id} on Kafka {v}: no outcome")
                                             for f in FEATURES for v in absent)]
    except MatrixError as exc:
        print(f"broker_matrix: {exc}", file=sys.stderr)
        return 1
    if bad:
        print("broker_matrix: this run disagrees with docs/compatibility.md:\n  "
              + "\n  ".join(bad), file=sys.stderr)
        return 1
    print(f"broker_matrix: {len(cells)} outcomes of {time.strftime('%Y-%m-%d')} agree with "
          f"{args.doc.relative_to(ROOT) if args.doc.is_relative_to(ROOT) else args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
