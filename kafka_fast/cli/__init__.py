"""The ``kafka-fast`` command: produce, consume, topics, metadata and bench.

Errors are reported in one line on stderr (exit 1; 2 for bad arguments), never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import TimeoutError as FutureTimeout

from .._version import __version__
from ..errors import KafkaException
from . import bench, consume, produce, topics
from .options import UsageError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="kafka-fast", description="Kafka from the command line, with kafka_fast.")
    parser.add_argument("--version", action="version", version=f"kafka-fast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (produce, consume, topics, bench):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"kafka-fast {args.command}: {exc}", file=sys.stderr)
        return 2
    except KafkaException as exc:
        err = exc.args[0]
        print(f"kafka-fast {args.command}: {err.name()}: {err.str()}", file=sys.stderr)
        return 1
    except FutureTimeout:
        print(f"kafka-fast {args.command}: timed out waiting for the cluster", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError, TypeError) as exc:
        print(f"kafka-fast {args.command}: {exc}", file=sys.stderr)
        return 1
