"""kcat's output forms, byte for byte: ``-f`` format strings, ``-K``/``-D`` delimiters and the
``-J`` JSON envelope. Keys, values and headers are written as the raw bytes they are."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from .options import UsageError, arg_bytes

_TOKENS = "tpoksSKThR%"
_HEX = re.compile(rb"(?:0[xX](?=[0-9a-fA-F]))?([0-9a-fA-F]+)")
_HEX_PREFIX = re.compile(rb"0[xX][0-9a-fA-F]")
_OCTAL = re.compile(rb"0([0-7]*)")
_DECIMAL = re.compile(rb"[0-9]+")
_ULONG_MAX = (1 << 64) - 1

Deserializer = Callable[[bytes], bytes]


def _number(data: bytes, pos: int, base: int) -> tuple[int, int] | None:
    """C's ``strtoul(data + pos, &end, base)`` for base 16 or 0 (``0x`` hex, ``0`` octal,
    else decimal) as (low byte of the value, end), or None when no digits are there."""
    if base == 0 and _HEX_PREFIX.match(data, pos):
        base = 16
    if base == 16:
        m = _HEX.match(data, pos)
        digits, radix = (m.group(1), 16) if m else (b"", 16)
    elif data[pos:pos + 1] == b"0":
        m = _OCTAL.match(data, pos)
        digits, radix = ((m.group(1) or b"0"), 8) if m else (b"", 8)
    else:
        m = _DECIMAL.match(data, pos)
        digits, radix = (m.group(), 10) if m else (b"", 10)
    if m is None or not digits:
        return None
    return min(int(digits, radix), _ULONG_MAX) & 0xFF, m.end()


def unescape(text: str | bytes) -> bytes:
    """A literal run of a ``-f`` format as kcat reads it: ``\\n \\r \\t``, ``\\x`` and hex
    digits, ``\\`` and decimal digits (``\\0NN`` octal, ``\\0xNN`` hex), each number's low
    byte; any other ``\\c`` is ``c``; the rest as the bytes given on the command line (argv
    bytes: UTF-8 or not)."""
    data = arg_bytes(text) if isinstance(text, str) else text
    out = bytearray()
    pos, end = 0, len(data)
    while pos < end:
        c = data[pos]
        if c != 0x5C or pos + 1 >= end:   # not a backslash, or a backslash at the end
            out.append(c)
            pos += 1
            continue
        pos += 1
        c = data[pos]
        simple = {0x74: 0x09, 0x6E: 0x0A, 0x72: 0x0D}.get(c)   # \t \n \r
        if simple is not None:
            out.append(simple)
            pos += 1
            continue
        base = 0
        if c == 0x78:   # \x
            base, pos = 16, pos + 1
            if pos >= end:
                break
        number = _number(data, pos, base) if base == 16 or data[pos:pos + 1].isdigit() \
            else None
        if number is None:
            out.append(data[pos])
            pos += 1
        else:
            out.append(number[0])
            pos = number[1]
    return bytes(out)


def parse_delim(text: str) -> bytes:
    """A ``-D``/``-K`` delimiter as kcat reads it before it becomes part of the output format:
    ``\\n``, ``\\t`` and ``\\x`` with hex digits (the number's low byte), replaced one at a
    time from the left, every ``\\n`` first; nothing else is an escape here."""
    data = bytearray(arg_bytes(text))
    while True:
        for seq, byte in ((b"\\n", b"\n"), (b"\\t", b"\t")):
            at = data.find(seq)
            if at >= 0:
                data[at:at + 2] = byte
                break
        else:
            at = data.find(b"\\x")
            if at < 0:
                return bytes(data)
            number = _number(bytes(data), at + 2, 16)
            if number is None:
                raise UsageError(f"delimiter {arg_bytes(text)!r}: \\x expects a hex number")
            data[at:number[1]] = bytes([number[0]])


def parse_format(fmt: str | bytes) -> list[bytes | str]:
    """A ``-f`` string as literal byte runs and one-letter tokens (``"s"`` for ``%s``), as
    kcat splits it: at each ``%`` first, then the escapes of each literal run."""
    data = arg_bytes(fmt) if isinstance(fmt, str) else fmt
    parts: list[bytes | str] = []
    pos = 0
    while pos < len(data):
        at = data.find(b"%", pos)
        if at < 0:
            at = len(data)
        if at > pos:
            parts.append(unescape(data[pos:at]))
        if at >= len(data):
            break
        token = chr(data[at + 1]) if at + 1 < len(data) else ""
        if not token:
            raise UsageError("-f: empty formatter: a format must not end with %")
        if token not in _TOKENS:
            raise UsageError(f"-f: unsupported formatter %{token} (kcat's tokens: "
                             + " ".join("%" + t for t in _TOKENS) + ")")
        parts.append(b"%" if token == "%" else token)
        pos = at + 2
    return parts


def delimited_format(key_delim: str | None, delim: str) -> list[bytes | str]:
    """kcat's output format without ``-f``: ``%k KEYDELIM %s DELIM`` (the key only with
    ``-K``), the delimiters read by ``parse_delim`` and then as format text."""
    key = b"%k" + parse_delim(key_delim) if key_delim is not None else b""
    return parse_format(key + b"%s" + parse_delim(delim))


def envelope_delimiter(parts: list[bytes | str]) -> bytes:
    """What kcat writes after each ``-J`` envelope: the format's leading literal text (the
    ``-f`` format's, else ``-D``'s), nothing when the format starts with a token."""
    return parts[0] if parts and isinstance(parts[0], bytes) else b""


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
