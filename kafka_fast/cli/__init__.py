"""The ``kafka-fast`` command: produce, consume, topics, metadata, groups and bench.

Errors are reported in one line on stderr (exit 1; 2 for bad arguments), never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from .._version import __version__
from ..errors import KafkaException
from . import bench, consume, groups, kcatargs, produce, topics
from .connect import ClientLog, ConnectError
from .options import UsageError


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="kafka-fast", description="Kafka from the command line, with kafka_fast. "
        "consume and produce take kcat's flags (consume: -G -p -o -c -e -f -K -D -J -Z -s -u; "
        "produce: -K -k -D -Z -l -H -p -z -c; both: -b -X -F -q) and write and read the "
        "exact bytes of keys, values and headers. A kcat command line works as it is with "
        "kafka-fast in front: kafka-fast -C|-P|-L|-Q|-G GROUP [kcat options].")
    parser.add_argument("--version", action="version", version=f"kafka-fast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in (produce, consume, topics, groups, bench):
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if kcatargs.is_kcat_command(argv):
        try:
            kcat_args = kcatargs.parse(argv, parser)
        except UsageError as exc:
            print(f"kafka-fast: {exc}", file=sys.stderr)
            return 1
        if kcat_args is None:   # -h or -V
            return 0
        args = kcat_args
    else:
        args = parser.parse_args(argv)
    last = ClientLog()
    args.client_log = last
    client_log = logging.getLogger("kafka_fast")
    client_log.addHandler(last)
    client_log.propagate = False

    def fail(text: str) -> int:
        why = f" (last client error: {last.message})" if last.message else ""
        print(f"kafka-fast {args.command}: {text}{why}", file=sys.stderr)
        return 1

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _Notes(args.command).show
            return args.run(args)
    except BrokenPipeError:
        _quiet_closed_stdout()
        return 0
    except ConnectError as exc:
        print(f"kafka-fast {args.command}: {exc}", file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"kafka-fast {args.command}: {exc}", file=sys.stderr)
        return 1 if getattr(args, "kcat", False) else 2   # kcat's status for bad input
    except KafkaException as exc:
        err = exc.args[0]
        return fail(f"{err.name()}: {err.str()}")
    except FutureTimeout:
        return fail("timed out waiting for the cluster")
    except KeyboardInterrupt:
        return 130
    except (OSError, ValueError, TypeError, OverflowError) as exc:
        return fail(str(exc))
    finally:
        client_log.removeHandler(last)


class _Notes:
    """Shows the client's warnings (a -X property that has no effect, say) as one line each,
    ``kafka-fast COMMAND: note: ...``, once, without the warning's file and line."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.shown: set[str] = set()

    def show(self, message: Warning | str, category: type[Warning], filename: str,
             lineno: int, file: Any = None, line: str | None = None) -> None:
        text = str(message)
        if text not in self.shown:
            self.shown.add(text)
            print(f"kafka-fast {self.command}: note: {text}", file=sys.stderr)


def _quiet_closed_stdout() -> None:
    """The reader of stdout went away (``| head``): end quietly with status 0, as kcat does.
    stdout is pointed at /dev/null so the interpreter's final flush cannot fail either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
