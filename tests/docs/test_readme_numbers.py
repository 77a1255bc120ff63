"""Numbers the README states agree with their sources: the record count of ``make demo`` with
the Makefile's RECORDS, and the README's tables with the stored benchmark runs."""

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


def test_readme_tables_are_generated_from_stored_runs():
    """The README's tables are bench blocks (tools/bench_report.py fills them from
    docs/bench/results; tests/bench checks they are current), and every row also appears in
    docs/benchmarks.md, generated from the same runs."""
    section = _demo_section()
    blocks = re.findall(r"<!-- bench: ([^>]*) -->\n```\n(.*?)```", section, re.S)
    assert [spec.split()[0] for spec, _ in blocks] == ["produce", "consume"]
    for _, table in blocks:
        rows = [line for line in table.splitlines() if line.startswith(("produce ", "consume "))]
        assert len(rows) >= 4
        for row in rows:
            assert row in BENCHMARKS, row
