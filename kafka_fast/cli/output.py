"""Summaries and record formatting for the CLI (text, JSON, kcat-style format strings)."""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from typing import Any

_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\", "\\0": "\0"}


def emit_summary(args: argparse.Namespace, verb: str, stats: dict[str, Any]) -> None:
    """Print the end-of-run summary: JSON on stdout with --json, else one line on stderr."""
    if getattr(args, "json", False):
        print(json.dumps({verb: stats}, sort_keys=True))
        return
    line = ", ".join(f"{k}={v}" for k, v in stats.items() if k != "first_error")
    if stats.get("first_error"):
        line += f"; first error: {stats['first_error']}"
    print(f"{verb}: {line}", file=sys.stderr)


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def message_json(msg: Any) -> str:
    """One record as a JSON object (text as UTF-8 when it decodes, else base64)."""

    def enc(data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(data).decode()}

    return json.dumps({
        "topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
        "timestamp": msg.timestamp()[1], "key": enc(msg.key()), "value": enc(msg.value()),
        "headers": [[k, enc(v)] for k, v in (msg.headers() or [])],
    })


_TOKEN = re.compile(r"%[tpoksSKThR%]|\\[ntr0\\]")


class KcatFormat:
    """Render a record with a kcat ``-f`` format string (%t %p %o %k %s %S %K %T %h %R %%)."""

    def __init__(self, fmt: str) -> None:
        self.parts = _TOKEN.split(fmt)
        self.tokens = _TOKEN.findall(fmt)

    def render(self, msg: Any) -> str:
        out = [self.parts[0]]
        for token, tail in zip(self.tokens, self.parts[1:], strict=True):
            out.append(self._value(token, msg))
            out.append(tail)
        return "".join(out)

    @staticmethod
    def _value(token: str, msg: Any) -> str:
        if token in _ESCAPES:
            return _ESCAPES[token]
        key, value = msg.key(), msg.value()
        return {
            "%t": lambda: msg.topic(),
            "%p": lambda: str(msg.partition()),
            "%o": lambda: str(msg.offset()),
            "%k": lambda: _text(key),
            "%s": lambda: _text(value),
            "%S": lambda: str(-1 if value is None else len(value)),
            "%K": lambda: str(-1 if key is None else len(key)),
            "%T": lambda: str(msg.timestamp()[1]),
            "%h": lambda: ",".join(f"{k}={_text(v)}" for k, v in (msg.headers() or [])),
            "%R": lambda: (len(value or b"")).to_bytes(4, "big").decode("latin-1"),
            "%%": lambda: "%",
        }[token]()
