"""kcat's ``-s`` pack-str deserializers: binary keys/values printed as numbers and text.

A pack-str is a sequence of ``<`` / ``>`` (byte order; big-endian by default, as in kcat),
``b B h H i I q Q`` (signed/unsigned 8-64 bit integers), ``c`` (one ASCII character), ``s``
(the rest as a string), ``$`` (no bytes may remain) and a space (written as it is). The decoded
fields are written one after the other with nothing between them, as kcat does.
"""

from __future__ import annotations

import argparse
import struct
from collections.abc import Callable

from .options import UsageError

_INTS = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8}


class DeserializeError(ValueError):
    """A key or value that does not match its pack-str."""


def pack_deserializer(spec: str) -> Callable[[bytes], bytes]:
    """The function that renders bytes by ``spec`` (UsageError when ``spec`` is not one)."""
    bad = [c for c in spec if c not in " <>cs$" and c not in _INTS]
    if not spec or bad:
        raise UsageError(f"-s: {spec!r} is not a pack-str (use <, >, b, B, h, H, i, I, q, Q, "
                         "c, s, $, space; avro needs a schema registry, not supported)")

    def decode(data: bytes) -> bytes:
        order = ">"
        pos = 0
        out = []
        for c in spec:
            if c in "<>":
                order = c
            elif c == " ":
                out.append(b" ")
            elif c == "s":
                out.append(data[pos:])
                pos = len(data)
            elif c == "$":
                if pos != len(data):
                    raise DeserializeError(
                        f"expected end-of-input, but {len(data) - pos} bytes remaining")
            else:
                size = 1 if c == "c" else _INTS[c]
                if len(data) - pos < size:
                    raise DeserializeError(f"{c!r} needs {size} bytes, {len(data) - pos} left")
                if c == "c":
                    out.append(data[pos:pos + 1])
                else:
                    out.append(str(struct.unpack_from(order + c, data, pos)[0]).encode())
                pos += size
        return b"".join(out)

    return decode


def parse_serdes(items: list[str]) -> tuple[Callable | None, Callable | None]:
    """``-s`` options (``key=SPEC``, ``value=SPEC`` or ``SPEC`` for both) as (key, value)."""
    key = value = None
    for item in items:
        field, sep, spec = item.partition("=")
        if sep and field == "key":
            key = pack_deserializer(spec)
        elif sep and field == "value":
            value = pack_deserializer(spec)
        elif sep:
            raise UsageError(f"-s: expected key=SPEC, value=SPEC or SPEC, got {item!r}")
        else:
            key = value = pack_deserializer(item)
    return key, value


def add_serdes_option(parser: argparse.ArgumentParser) -> None:
    """Add kcat's repeatable ``-s``."""
    parser.add_argument("-s", dest="serdes", action="append", default=[],
                        metavar="[key=|value=]PACK",
                        help="deserialize non-null keys/values with a kcat pack-str, e.g. "
                             "-s key='>i' -s value='>hQs' (text output and -f only, as kcat)")
