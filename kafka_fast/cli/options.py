"""Options every subcommand shares: bootstrap, -X key=value, -F properties file, output mode."""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

#: The largest offset or timestamp Kafka stores (a signed 64-bit integer).
INT64_MAX = (1 << 63) - 1
#: The largest partition number (a signed 32-bit integer).
INT32_MAX = (1 << 31) - 1


class UsageError(Exception):
    """Bad command-line input, reported in one line with exit status 2."""


def add_common(parser: argparse.ArgumentParser) -> None:
    """Add -b, -X, -F, -q and --json to ``parser``."""
    parser.add_argument("-b", "--bootstrap", metavar="BROKERS",
                        help="bootstrap servers, host:port[,host:port...] (or "
                             "bootstrap.servers from -F/-X)")
    parser.add_argument("-X", dest="props", action="append", default=[], metavar="KEY=VALUE",
                        help="client configuration property (repeatable)")
    parser.add_argument("-F", dest="prop_file", metavar="FILE",
                        help="read client configuration (key=value lines, e.g. "
                             "bootstrap.servers) from a properties file, as kcat -F")
    parser.add_argument("-q", dest="quiet", action="store_true",
                        help="quiet: no status lines or summary on stderr (errors still)")
    parser.add_argument("--json", action="store_true",
                        help="reports and summaries as JSON (records themselves: see "
                             "--format), no progress bars")


def in_range(value: int | None, option: str, low: int, high: int) -> int | None:
    """``value`` if it is None or within ``[low, high]``, else UsageError naming ``option``."""
    if value is not None and not low <= value <= high:
        raise UsageError(f"{option} must be between {low} and {high}, got {value}")
    return value


def seconds(value: float, option: str = "--timeout") -> float:
    """A positive, finite number of seconds, else UsageError naming ``option``."""
    if not math.isfinite(value) or value <= 0 or value > INT32_MAX / 1000:
        raise UsageError(f"{option} must be a positive number of seconds up to "
                         f"{INT32_MAX // 1000}, got {value:g}")
    return value


def arg_bytes(text: str) -> bytes:
    """A command-line argument as the bytes it was given as (kcat takes argv bytes): the
    interpreter decodes argv with surrogateescape, and this is its inverse."""
    return os.fsencode(text)


def parse_properties(text: str, source: str) -> dict[str, str]:
    """Parse ``key=value`` lines (Java properties style; ``#``/``!`` comments, blank lines)."""
    conf: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep <= 0:
            raise UsageError(f"{source}:{number}: expected key=value, got {raw.strip()!r}")
        conf[line[:sep].strip()] = line[sep + 1:].strip()
    return conf


def client_config(args: argparse.Namespace) -> dict[str, Any]:
    """Build the client configuration dict from the command's defaults (``args.defaults``),
    then -F, then -X, then -b (later wins)."""
    conf: dict[str, Any] = dict(getattr(args, "defaults", {}))
    if getattr(args, "prop_file", None):
        try:
            with open(args.prop_file, encoding="utf-8") as fh:
                conf.update(parse_properties(fh.read(), args.prop_file))
        except OSError as exc:
            raise UsageError(f"cannot read {args.prop_file}: {exc.strerror}") from None
    for item in getattr(args, "props", []):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-X expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    if getattr(args, "bootstrap", None):
        conf["bootstrap.servers"] = args.bootstrap
    if not str(conf.get("bootstrap.servers", "")).strip():
        raise UsageError("no brokers given: use -b HOST:PORT, or bootstrap.servers in -F FILE "
                         "or -X")
    return conf


def want_progress(args: argparse.Namespace) -> bool:
    """Progress bars only for a person at a terminal."""
    return not getattr(args, "json", False) and sys.stdout.isatty() and sys.stderr.isatty()
