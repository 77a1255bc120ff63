"""kcat's output forms, byte for byte: ``-f`` format strings, ``-K``/``-D`` delimiters and the
``-J`` JSON envelope. Keys, values and headers are written as the raw bytes they are."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from .options import UsageError, arg_bytes

_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[ntr0\\])")
_SIMPLE = {"n": b"\n", "t": b"\t", "r": b"\r", "0": b"\0", "\\": b"\\"}
_TOKENS = "tpoksSKThR%"

Deserializer = Callable[[bytes], bytes]


def unescape(text: str) -> bytes:
    """kcat's delimiter/format escapes: ``\\n \\r \\t \\0 \\\\ \\xNN``; the rest as the bytes
    it was given as on the command line (``os.fsencode``: UTF-8, and any other bytes as they
    are)."""
    out = bytearray()
    pos = 0
    for m in _ESCAPE.finditer(text):
        out += arg_bytes(text[pos:m.start()])
        esc = m.group(1)
        out += bytes([int(esc[1:], 16)]) if esc[0] == "x" else _SIMPLE[esc]
        pos = m.end()
    out += arg_bytes(text[pos:])
    return bytes(out)


def parse_format(fmt: str) -> list[bytes | str]:
    """A ``-f`` string as literal byte runs and one-letter tokens (``"s"`` for ``%s``)."""
    parts: list[bytes | str] = []
    for i, chunk in enumerate(re.split(r"(%.?)", fmt)):
        if i % 2 == 0:
            if chunk:
                parts.append(unescape(chunk))
        elif len(chunk) == 2 and chunk[1] in _TOKENS:
            parts.append(b"%" if chunk[1] == "%" else chunk[1])
        else:
            raise UsageError(f"-f: unsupported formatter {chunk!r} (kcat's tokens: "
                             + " ".join("%" + t for t in _TOKENS) + ")")
    return parts


class KcatFormat:
    """Renders a record as bytes with a parsed format; ``null`` is what a null or empty key or
    value prints as (b"" by default, b"NULL" with -Z, as kcat); ``key_serde``/``value_serde`` turn non-null
    keys/values into text (``-s``)."""

    def __init__(self, parts: list[bytes | str], null: bytes = b"",
                 key_serde: Deserializer | None = None,
                 value_serde: Deserializer | None = None) -> None:
        self.parts = parts
        self.null = null
        self.key_serde = key_serde
        self.value_serde = value_serde

    @classmethod
    def from_delimiters(cls, key_delim: bytes | None, msg_delim: bytes,
                        **kwargs: Any) -> KcatFormat:
        """kcat's output without -f: ``[key KEYDELIM] value MSGDELIM``."""
        parts: list[bytes | str] = ["k", key_delim] if key_delim is not None else []
        return cls([*parts, "s", msg_delim], **kwargs)

    def render(self, msg: Any) -> bytes:
        out = bytearray()
        for part in self.parts:
            out += part if isinstance(part, bytes) else self._field(part, msg)
        return bytes(out)

    def _data(self, data: bytes | None, serde: Deserializer | None) -> bytes:
        if not data:  # kcat prints an empty key or value as it prints a null one
            return self.null
        return serde(data) if serde is not None else data

    def _field(self, token: str, msg: Any) -> bytes:
        if token == "s":
            return self._data(msg.value(), self.value_serde)
        if token == "k":
            return self._data(msg.key(), self.key_serde)
        if token == "S":
            return str(_size(msg.value())).encode()
        if token == "K":
            return str(_size(msg.key())).encode()
        if token == "R":
            return struct.pack(">i", _size(msg.value()))
        if token == "h":
            return b",".join(name.encode() + b"=" + (b"NULL" if v is None else v)
                             for name, v in (msg.headers() or []))
        if token == "t":
            return msg.topic().encode()
        if token == "p":
            return str(msg.partition()).encode()
        if token == "o":
            return str(msg.offset()).encode()
        return str(msg.timestamp()[1]).encode()  # "T"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


# --- -J: kcat's JSON envelope ------------------------------------------------------------------
_JSON_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x0A: b"\\n", 0x0D: b"\\r", 0x09: b"\\t",
                 0x08: b"\\b", 0x0C: b"\\f"}
_JSON_TABLE = [_JSON_ESCAPES.get(c, b"\\u%04X" % c if c < 0x20 else bytes([c]))
               for c in range(256)]
_JSON_PLAIN = re.compile(rb'[^"\\\x00-\x1f]*')
_TSTYPE = {1: "create", 2: "logappend"}


def json_bytes(data: bytes | None) -> bytes:
    """``data`` as a JSON string the way kcat writes it: quotes, backslashes and control
    characters escaped, every other byte (UTF-8 or not) written unchanged; None is null."""
    if data is None:
        return b"null"
    out = bytearray(b'"')
    pos = 0
    while pos < len(data):
        m = _JSON_PLAIN.match(data, pos)
        assert m is not None  # the pattern also matches the empty string
        out += m.group()
        pos = m.end()
        if pos < len(data):
            out += _JSON_TABLE[data[pos]]
            pos += 1
    out += b'"'
    return bytes(out)


def kcat_envelope(msg: Any, broker: int) -> bytes:
    """One record in kcat's ``-J`` envelope (one line, no newline)."""
    ts_type, ts = msg.timestamp()
    out = bytearray(b'{"topic":' + json_bytes(msg.topic().encode()))
    out += b',"partition":%d,"offset":%d' % (msg.partition(), msg.offset())
    out += b',"tstype":"%s","ts":%d' % (_TSTYPE.get(ts_type, "unknown").encode(), ts)
    out += b',"broker":%d' % broker
    headers = msg.headers()
    if headers:
        out += b',"headers":[' + b",".join(
            json_bytes(name.encode()) + b"," + json_bytes(v) for name, v in headers) + b"]"
    out += b',"key":' + json_bytes(msg.key()) + b',"payload":' + json_bytes(msg.value()) + b"}"
    return bytes(out)
