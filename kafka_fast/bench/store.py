"""Benchmark results as data: each run appends one JSON line (commit, machine, broker,
settings and every case's figures) to ``<dir>/<bench>.jsonl``; docs tables are generated from
these lines (``tools/bench_report.py``), never typed."""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

#: where the benchmark scripts of a source checkout keep their results
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "docs" / "bench" / "results"


def _first(path: str, prefix: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine() -> dict[str, Any]:
    """CPU model, CPU count, memory, kernel and Python of this machine."""
    mem_kb = _first("/proc/meminfo", "MemTotal").split()
    return {
        "cpu": _first("/proc/cpuinfo", "model name") or platform.processor(),
        "cpus": os.cpu_count(),
        "memory_gb": round(int(mem_kb[0]) / 1024 / 1024, 1) if mem_kb else None,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def commit(where: Path | None = None) -> str:
    """The source commit (``-dirty`` when a file other than docs and results differs), or
    ""."""
    cwd = str(where or Path(__file__).resolve().parent)
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd,
                              capture_output=True, text=True, timeout=10, check=True)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                cwd=cwd, capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return ""
    dirty = [line for line in status.stdout.splitlines() if _measured(line[3:])]
    return head.stdout.strip() + ("-dirty" if dirty else "")


def _measured(path: str) -> bool:
    """Whether a changed file can change what a run measures: anything but docs/ (the
    results and the pages drawn from them) and the top-level Markdown files."""
    path = path.split(" -> ")[-1].strip('"')
    return not (path.startswith("docs/") or ("/" not in path and path.endswith(".md")))


def record(bench: str, broker: str, settings: dict[str, Any], results: list[dict[str, Any]]
           ) -> dict[str, Any]:
    """One run as stored: when, which commit and machine, what was run and what it gave."""
    return {
        "bench": bench,
        "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(),
        "machine": machine(),
        "broker": broker,
        "settings": settings,
        "results": results,
    }


def append(directory: Path, run: dict[str, Any]) -> Path:
    """Append ``run`` as one line to ``directory/<bench>.jsonl``; the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{run['bench']}.jsonl"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(run, sort_keys=True) + "\n")
    return path


def load(path: Path) -> list[dict[str, Any]]:
    """Every run stored in ``path``, oldest first (a malformed line raises, naming it)."""
    runs = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if line.strip():
                try:
                    runs.append(json.loads(line))
                except ValueError as exc:
                    raise ValueError(f"{path}:{number}: not a JSON result line: {exc}") from None
    return runs
