"""The Python snippets of README.md and docs/**/*.md, with the marker comments that steer them.

A snippet is a fenced ``python`` block. An HTML comment on the line just above its fence says
how the snippet test treats it (no comment: it runs as is):

- ``<!-- snippet: skip: REASON -->``: not run, and REASON says why (a Spark session, a
  fragment of a larger program);
- ``<!-- snippet: given broker -->``: run with ``broker`` bound to the test's broker object.

Every ``localhost:9092`` / ``127.0.0.1:9092`` / ``broker:9092`` in a snippet is replaced by the
bootstrap address of the test broker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER_ADDRESSES = ("localhost:9092", "127.0.0.1:9092", "broker:9092")
_MARKER = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Snippet:
    source: str  # e.g. "docs/spark.md#2" (the second snippet of that file)
    line: int  # line of the opening fence
    code: str
    marker: str | None  # the marker comment's text after "snippet:", if any

    @property
    def skip_reason(self) -> str | None:
        if self.marker is None or not self.marker.startswith("skip"):
            return None
        return self.marker.partition(":")[2].strip()

    @property
    def given(self) -> list[str]:
        if self.marker is None or not self.marker.startswith("given "):
            return []
        return self.marker.split()[1:]

    def code_for(self, bootstrap: str) -> str:
        code = self.code
        for address in PLACEHOLDER_ADDRESSES:
            code = code.replace(address, bootstrap)
        return code


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def snippets_of(path: Path) -> list[Snippet]:
    lines = path.read_text(encoding="utf-8").splitlines()
    name = path.relative_to(ROOT).as_posix()
    out: list[Snippet] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"{name}:{start + 1}: python block is never closed")
            above = lines[start - 1].strip() if start > 0 else ""
            match = _MARKER.match(above)
            out.append(Snippet(f"{name}#{len(out) + 1}", start + 1, "\n".join(body) + "\n",
                               match.group(1) if match else None))
        i += 1
    return out


def all_snippets() -> list[Snippet]:
    return [s for path in doc_files() for s in snippets_of(path)]


def stray_markers() -> list[str]:
    """Marker comments not placed just above a python fence (``file:line``)."""
    found = []
    for path in doc_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if _MARKER.match(line.strip()) and (
                    i + 1 >= len(lines) or lines[i + 1].strip() != "```python"):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{i + 1}")
    return found
