"""End-of-run summaries and status lines. Records themselves go through ``kcatfmt`` and
``jsonrecord``; nothing here ever writes into a record stream."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO


def emit_summary(args: argparse.Namespace, verb: str, stats: dict[str, Any],
                 stream: TextIO | None = None) -> None:
    """Print the end-of-run summary to ``stream`` (default stderr): one JSON object with
    --json, else one line. Nothing with -q unless --json asked for it."""
    stream = stream or sys.stderr
    if getattr(args, "json", False):
        print(json.dumps({verb: stats}, sort_keys=True), file=stream, flush=True)
        return
    if getattr(args, "quiet", False):
        return
    line = ", ".join(f"{k}={v}" for k, v in stats.items() if k not in ("first_error", "bad_input"))
    if stats.get("first_error"):
        line += f"; first error: {stats['first_error']}"
    print(f"{verb}: {line}", file=stream, flush=True)


def status(args: argparse.Namespace, text: str) -> None:
    """A line on stderr saying what the command is doing or waiting for (not with -q)."""
    if not getattr(args, "quiet", False):
        print(f"% {text}", file=sys.stderr, flush=True)
