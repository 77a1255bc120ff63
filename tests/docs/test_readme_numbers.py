"""Numbers the README states agree with their sources: the record count of ``make demo`` with
the Makefile's RECORDS, and the demo table with the benchmark run in docs/benchmarks.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BENCHMARKS = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def _demo_section() -> str:
    return README.split("## What `make demo` shows", 1)[1].split("\n## ", 1)[0]


def test_readme_states_the_makefiles_demo_record_count():
    records = re.search(r"^RECORDS \?= (\d+)$", MAKEFILE, re.M)
    assert records, "RECORDS default missing from the Makefile"
    stated = re.search(r"in the same run, with ([\d,]+)\s+records of 100 bytes", _demo_section())
    assert stated, "the demo's record count is missing from the README"
    assert _count(stated.group(1)) == int(records.group(1))


def test_readme_demo_table_is_the_documented_benchmark_run():
    section = _demo_section()
    shown = re.search(r"With ([\d,]+) records it\s+printed", section)
    run = re.search(r"^kafka-fast bench --records (\d+) ", BENCHMARKS, re.M)
    assert shown and run
    assert _count(shown.group(1)) == int(run.group(1))
    table = section.split("```", 2)[1].strip().splitlines()
    rows = [line for line in table if line.startswith(("produce ", "consume "))]
    assert len(rows) >= 4
    documented = {" ".join(line.split()[:-2]) for line in BENCHMARKS.splitlines()
                  if line.startswith(("produce ", "consume "))}
    for row in rows:  # the README drops the last two columns (client, broker cores)
        assert " ".join(row.split()) in documented, row
