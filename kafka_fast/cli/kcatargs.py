"""kcat's own command line in front of kafka-fast: ``kafka-fast -C -b HOST -t T -e -f '%s\\n'``.

A command line that starts with an option (not a subcommand) is read as kcat reads its
arguments (POSIX getopt with GNU argument permutation: ``-Ce``, ``-tTOPIC``, file names
anywhere) and turned into the ``consume`` or ``produce`` subcommand, or the ``-L``/``-Q``
listings of ``kcatmeta``. A kcat flag kafka-fast cannot honour is refused, naming it.
"""

from __future__ import annotations

import argparse
import os
import sys

from .._version import __version__
from .options import UsageError, add_common

#: kcat 1.7's getopt string (a letter followed by ":" takes a value).
OPTSTRING = "PCG:LQM:t:p:b:z:o:eED:K:k:H:Od:qvF:X:c:Tuf:ZlVhs:r:Jm:U"

#: Flags refused in every mode, with the reason.
REFUSED = {
    "M": "starts librdkafka's mock cluster, which kafka-fast does not include",
    "r": "names a schema registry (Avro), which kafka-fast does not read",
    "T": "(tee produced records to stdout) is not supported",
    "E": "(go on after errors) is not supported: kafka-fast stops at the first error",
    "O": "is not supported (kcat 1.7 accepts it and prints nothing more)",
    "U": "runs kcat's own unit tests",
}

#: The flags each mode takes, besides the ones every mode takes (``ALWAYS``).
ALWAYS = set("btXFqvdmuVh")
MODE_FLAGS = {
    "C": set("poecfJsDKZ"),
    "G": set("poecfJsDKZ"),
    "P": set("pzDKkHlcZ"),
    "L": set("tJ"),
    "Q": set("tJ"),
}
MODE_NAMES = {"C": "consuming (-C)", "G": "consuming in a group (-G)", "P": "producing (-P)",
              "L": "listing metadata (-L)", "Q": "querying offsets (-Q)"}
CONFIG_ENV = ("KCAT_CONFIG", "KAFKACAT_CONFIG")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CONFIG_FILES = (".config/kcat.conf", ".config/kafkacat.conf")

USAGE = """\
kafka-fast, with kcat's command line: kafka-fast <mode> [options] [file ...]
Modes: -C consume, -P produce, -L metadata list, -Q offsets for times, -G GROUP consume in a
group (the topic after the options). Options as kcat's: -b -t -p -o -e -c -f -J -D -K -k -H
-l -z -Z -s -u -q -v -d -m -F -X. Not supported: -M -r -T -E -O -U, -X list/dump, -s avro.
The subcommands (kafka-fast consume|produce|topics|groups|bench --help) are unchanged.
"""


def is_kcat_command(argv: list[str]) -> bool:
    """Whether ``argv`` is a kcat command line (it starts with an option that is not one of
    kafka-fast's own ``-h``/``--help``/``--version``)."""
    return bool(argv) and argv[0].startswith("-") and argv[0] not in ("-h", "--help",
                                                                     "--version")


def getopt(argv: list[str], optstring: str = OPTSTRING) -> tuple[list[tuple[str, str]], list[str]]:
    """``argv`` as getopt(3) with GNU permutation reads it: (flag, value) pairs (value "" for
    a flag without one) and the other arguments; ``--`` ends the options."""
    takes = {c: optstring[i + 1:i + 2] == ":" for i, c in enumerate(optstring) if c != ":"}
    opts: list[tuple[str, str]] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            rest += argv[i:]
            break
        if arg.startswith("--"):
            raise UsageError(f"unknown option {arg} (kcat's options are single letters)")
        if not arg.startswith("-") or arg == "-":
            rest.append(arg)
            continue
        pos = 1
        while pos < len(arg):
            flag = arg[pos]
            pos += 1
            if flag not in takes:
                raise UsageError(f"unknown option -{flag}")
            if not takes[flag]:
                opts.append((flag, ""))
                continue
            if pos < len(arg):
                opts.append((flag, arg[pos:]))
            elif i < len(argv):
                opts.append((flag, argv[i]))
                i += 1
            else:
                raise UsageError(f"option -{flag} requires a value")
            break
    return opts, rest


def _integer(flag: str, text: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise UsageError(f"-{flag} expects a number, got {text!r}") from None


def _mode(opts: list[tuple[str, str]]) -> str:
    mode = ""
    for flag, _ in opts:
        if flag in "PCLQG":
            if mode and mode != flag:
                raise UsageError(f"do not mix modes: -{flag} given after -{mode}")
            mode = flag
    if not mode:
        mode = "C" if sys.stdin.isatty() else "P"
        if not any(flag == "q" for flag, _ in opts):
            print(f"% Auto-selecting {'Consumer' if mode == 'C' else 'Producer'} mode "
                  "(use -P or -C to override)", file=sys.stderr)
    return mode


def _check_mode_flags(opts: list[tuple[str, str]], mode: str) -> None:
    allowed = ALWAYS | MODE_FLAGS[mode] | set("PCLQG")
    for flag, _ in opts:
        if flag not in allowed:
            raise UsageError(f"-{flag} is not an option for {MODE_NAMES[mode]}")


def _check_refused(opts: list[tuple[str, str]]) -> None:
    for flag, value in opts:
        if flag in REFUSED:
            raise UsageError(f"-{flag} {REFUSED[flag]}")
        if flag == "X" and value in ("list", "help", "dump"):
            raise UsageError(f"-X {value} is not supported: kafka-fast's properties are "
                             "listed in docs/configuration.md")
        if flag == "s" and value.partition("=")[2 if "=" in value else 0] == "avro":
            raise UsageError(f"-s {value}: Avro needs a schema registry, which kafka-fast "
                             "does not read (pack-strs are supported)")


def _config_file(opts: list[tuple[str, str]]) -> str | None:
    """The configuration file kcat would read: the last -F (none for ``-F -``/``-F none``),
    else $KCAT_CONFIG, else ~/.config/kcat.conf when it exists."""
    given = [value for flag, value in opts if flag == "F"]
    if given:
        return None if given[-1] in ("-", "none") else given[-1]
    for name in CONFIG_ENV:
        if os.environ.get(name):
            return os.environ[name]
    home = os.environ.get("HOME")
    for name in CONFIG_FILES if home else ():
        path = os.path.join(home or "", name)
        if os.path.isfile(path):
            return path
    return None


def _offsets(values: list[str]) -> list[str]:
    """kcat's -o options as kafka-fast's: the last s@ (it wins over any other start), else
    the last start offset, and the last e@."""
    stops = [v for v in values if v.startswith("e@")]
    times = [v for v in values if v.startswith("s@")]
    starts = [v for v in values if not v.startswith(("e@", "s@"))]
    chosen = times[-1:] or starts[-1:]
    return chosen + stops[-1:]


def _opt(flag: str, value: str) -> list[str]:
    """``-F VALUE`` for argparse; attached (``-o-5``) when the value starts with "-", which
    argparse would otherwise take for an option."""
    return [f"-{flag}{value}"] if value.startswith("-") else [f"-{flag}", value]


def _common(opts: list[tuple[str, str]], conf_file: str | None) -> list[str]:
    out: list[str] = []
    for flag, value in opts:
        if flag == "b":
            out += _opt("b", value)
        elif flag == "X":
            key, sep, val = value.partition("=")
            if not sep:
                raise UsageError(f"-X expects property=value, got {value!r}")
            key = key.removeprefix("topic.")
            out.append(f"-X{'bootstrap.servers' if key == 'metadata.broker.list' else key}={val}")
        elif flag == "d":
            out.append(f"-Xdebug={value}")
        elif flag == "q":
            out.append("-q")
        elif flag == "m":
            try:
                seconds = float(value)
            except ValueError:
                raise UsageError(f"-m expects seconds, got {value!r}") from None
            out.append(f"--timeout={seconds}")
    if conf_file is not None:
        out += _opt("F", conf_file)
    return out


def _consume(opts: list[tuple[str, str]], rest: list[str], mode: str) -> list[str]:
    out = ["consume"]
    topics = [v for f, v in opts if f == "t"]
    if mode == "G":
        group = [v for f, v in opts if f == "G"][-1]
        topics = rest or topics[-1:]
        if len(topics) != 1:
            raise UsageError(f"-G: kafka-fast consumes one topic in a group, got {len(topics)}"
                             + (f" ({' '.join(topics)})" if topics else ""))
        out += _opt("G", group)
        if not any(f == "o" for f, _ in opts) and not _has_property(opts, "auto.offset.reset"):
            out.append("-Xauto.offset.reset=latest")   # librdkafka's default, as kcat -G
    elif rest:
        raise UsageError("file or topic arguments are only for producing (-P) or -G, got "
                         + " ".join(rest))
    if topics:
        out += _opt("t", topics[-1])
    for value in _offsets([v for f, v in opts if f == "o"]):
        out.append(f"-o{value}")
    for flag, value in opts:
        if flag == "p":
            number = _integer("p", value)
            if number != -1:
                out.append(f"-p{number}")
        elif flag == "c":
            count = _integer("c", value)
            if count > 0:   # kcat: 0 (or less) is no limit
                out.append(f"-c{count}")
        elif flag in "eJZu":
            out.append("-" + flag)
        elif flag in "fsDK":
            out += _opt(flag, value)
    return out


def _produce(opts: list[tuple[str, str]], rest: list[str]) -> list[str]:
    out = ["produce"]
    topics = [v for f, v in opts if f == "t"]
    if topics:
        out += _opt("t", topics[-1])
    for flag, value in opts:
        if flag == "p":
            out.append(f"-p{_integer('p', value)}")
        elif flag == "c":
            count = _integer("c", value)
            if count > 0:   # kcat: 0 (or less) is no limit
                out.append(f"-c{count}")
        elif flag in "lZ":
            out.append("-" + flag)
        elif flag == "z" and value not in CODECS:
            raise UsageError(f"-z expects one of {', '.join(CODECS)}, got {value!r}")
        elif flag in "zDKkH":
            out += _opt(flag, value)
    return [*out, "--", *rest] if rest else out


def _has_property(opts: list[tuple[str, str]], name: str) -> bool:
    return any(f == "X" and v.partition("=")[0].removeprefix("topic.") == name
               for f, v in opts)


def parse(argv: list[str], parser: argparse.ArgumentParser) -> argparse.Namespace | None:
    """The namespace a kcat command line runs as (None after -V or -h, which print and end);
    UsageError names a flag that is wrong or not supported."""
    opts, rest = getopt(argv)
    flags = {flag for flag, _ in opts}
    if "h" in flags:
        print(USAGE, end="")
        return None
    if "V" in flags:
        print(f"kafka-fast {__version__} (kcat command line)")
        return None
    _check_refused(opts)
    mode = _mode(opts)
    _check_mode_flags(opts, mode)
    if mode in "CP" and not any(flag == "t" for flag, _ in opts):
        raise UsageError("-t <topic> missing")
    conf_file = _config_file(opts)
    common = _common(opts, conf_file)
    if mode in "LQ":
        from . import kcatmeta

        if rest:
            raise UsageError("file or topic arguments are only for producing (-P) or -G, got "
                             + " ".join(rest))
        args = kcatmeta.namespace(mode, [v for f, v in opts if f == "t"], "J" in flags)
        shared = argparse.ArgumentParser(prog="kafka-fast", add_help=False)
        add_common(shared)
        shared.add_argument("--timeout", type=float, default=30.0)
        sub = shared.parse_args(common)
        for name in ("bootstrap", "props", "prop_file", "quiet", "json", "timeout"):
            setattr(args, name, getattr(sub, name))
    else:
        argv_out = _consume(opts, rest, mode) if mode in "CG" else _produce(opts, rest)
        # The subcommand's own options go before any "--" that ends them.
        cut = argv_out.index("--") if "--" in argv_out else len(argv_out)
        args = parser.parse_args(argv_out[:cut] + common + argv_out[cut:])
        if mode == "P":
            args.defaults = {"partitioner": "consistent_random"}   # librdkafka's, as kcat
    if not args.bootstrap and args.prop_file is None and not _has_property(
            opts, "bootstrap.servers") and not _has_property(opts, "metadata.broker.list"):
        raise UsageError("-b <broker,..> missing")
    args.kcat = True
    return args
