"""The field and metric names docs/statistics.md documents, read from its tables."""

from __future__ import annotations

import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "statistics.md")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|")


def documented() -> tuple[dict[str, set[str]], set[str]]:
    """({section: field names} of the "## Fields" tables, metric names of "## metrics()")."""
    sections: dict[str, set[str]] = {}
    metrics: set[str] = set()
    part = section = None
    with open(DOC, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("## "):
                part, section = line[3:].strip(), None
            elif line.startswith("### "):
                section = line[4:].strip()
            else:
                m = _ROW.match(line)
                if m is None:
                    continue
                if part == "Fields" and section is not None:
                    sections.setdefault(section, set()).add(m.group(1))
                elif part == "metrics()":
                    metrics.add(m.group(1))
    return sections, metrics
