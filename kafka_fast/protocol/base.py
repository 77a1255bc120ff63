"""Base classes of the generated message and struct classes, and codec error reporting."""

from __future__ import annotations

import builtins
import struct
from typing import Any, NamedTuple

from kafka_fast.errors import ProtocolError
from kafka_fast.protocol.primitives import WireError

__all__ = ["DEFAULT", "Field", "Message", "Struct", "new"]

new = object.__new__


class _Default:
    """Marks a constructor argument left to its schema default (an empty list or struct)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()

_OPEN = 0x7FFF


class Field(NamedTuple):
    """Schema of one field, as declared in the JSON message definition."""

    attr: str
    name: str
    type: str
    versions: tuple[int, int]
    nullable_versions: tuple[int, int] | None
    tag: int | None
    tagged_versions: tuple[int, int] | None
    ignorable: bool
    default: Any
    struct: builtins.type | None  # ``type`` here would name the field above

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def nullable(self, version: int) -> bool:
        nv = self.nullable_versions
        return nv is not None and nv[0] <= version <= nv[1]

    def tagged(self, version: int) -> bool:
        tv = self.tagged_versions
        return tv is not None and tv[0] <= version <= tv[1]


class Struct:
    """A schema struct: one attribute per field plus ``unknown_tagged_fields``.

    Fields that a decoded version does not carry take their schema default on first access.
    """

    __slots__ = ("unknown_tagged_fields",)
    FIELDS: tuple[Field, ...] = ()
    _DEFAULTS: dict[str, Any] = {"unknown_tagged_fields": None}
    _FACTORIES: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        cls = self.__class__
        if name in cls._DEFAULTS:
            value = cls._DEFAULTS[name]
        elif name in cls._FACTORIES:
            value = cls._FACTORIES[name]()
        else:
            raise AttributeError(f"{cls.__qualname__!r} object has no attribute {name!r}")
        setattr(self, name, value)
        return value

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        for f in self.FIELDS:
            if getattr(self, f.attr) != getattr(other, f.attr):
                return False
        return (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        parts = []
        for f in self.FIELDS:
            value = getattr(self, f.attr)
            default = f.default() if callable(f.default) else f.default
            if value is f.default or (value == default and type(value) is type(default)):
                continue
            if isinstance(value, memoryview):
                parts.append(f"{f.attr}=<{value.nbytes} bytes>")
            else:
                parts.append(f"{f.attr}={value!r}")
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{self.__class__.__qualname__}({', '.join(parts)})"


class Message(Struct):
    """A top-level message (request, response, header or data) with per-version codecs."""

    __slots__ = ()
    NAME = ""
    API_KEY: int | None = None
    MIN_VERSION = 0
    MAX_VERSION = 0
    FLEXIBLE_MIN: int | None = None
    _DECODERS: tuple = ()
    _ENCODERS: tuple = ()

    @classmethod
    def decode(cls, buf: Any, version: int, *, strict: bool = False) -> Any:
        """Decode one message body from ``buf`` (bytes, bytearray or memoryview).

        ``records`` fields are memoryview slices of ``buf``. Raises ``ProtocolError`` on
        truncated or malformed input. Bytes after the last field are ignored, as Kafka's
        clients do (librdkafka's mock cluster sends one after flexible Metadata responses);
        with ``strict`` they raise ``ProtocolError`` too.
        """
        mv = _byte_view(buf)
        obj, end = cls._decode(mv, version, 0)
        if strict and end != len(mv):
            raise ProtocolError(
                f"{cls.NAME} v{version}: {len(mv) - end} unexpected bytes after the last field"
            )
        return obj

    @classmethod
    def decode_from(cls, buf: Any, version: int, offset: int = 0) -> tuple[Any, int]:
        """Decode one message body starting at ``offset``: ``(message, end_offset)``.

        Bytes after the message are not looked at (Kafka's clients ignore them in responses,
        and some brokers send them).
        """
        return cls._decode(_byte_view(buf), version, offset)

    @classmethod
    def _decode(cls, mv: memoryview, version: int, offset: int) -> tuple[Any, int]:
        decoder = _lookup(cls, cls._DECODERS, version)
        try:
            return decoder(mv, offset)
        except Exception as exc:
            raise _failure(cls, version, "decode", exc) from None

    def encode_into(self, out: bytearray, blobs: list, version: int) -> None:
        """Append this message at ``version`` to ``out``; large records go to ``blobs``."""
        encoder = _lookup(self.__class__, self._ENCODERS, version)
        try:
            encoder(out, blobs, self)
        except Exception as exc:
            raise _failure(self.__class__, version, "encode", exc) from None

    def encode_chunks(self, version: int) -> list:
        """Encode as a list of bytes-like chunks; large ``records`` values are their own chunks."""
        out = bytearray()
        blobs: list = []
        self.encode_into(out, blobs, version)
        return chunks_of(out, blobs)

    def encode(self, version: int) -> bytes:
        """Encode as one bytes object."""
        out = bytearray()
        blobs: list = []
        self.encode_into(out, blobs, version)
        if not blobs:
            return bytes(out)
        return b"".join(chunks_of(out, blobs))


def _byte_view(buf: Any) -> memoryview:
    mv = buf if buf.__class__ is memoryview else memoryview(buf)
    if mv.ndim != 1 or mv.itemsize != 1:
        mv = mv.cast("B")
    return mv


def chunks_of(out: bytearray, blobs: list) -> list:
    """Interleave ``out`` with the blobs recorded at their offsets, without copying."""
    if not blobs:
        return [out]
    view = memoryview(out)
    chunks = []
    prev = 0
    for at, blob in blobs:
        if at > prev:
            chunks.append(view[prev:at])
        chunks.append(blob)
        prev = at
    if prev < len(out):
        chunks.append(view[prev:])
    return chunks


def _lookup(cls: type[Message], table: tuple, version: int) -> Any:
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise ProtocolError(
            f"{cls.NAME} v{version}: unsupported version "
            f"(valid {cls.MIN_VERSION}-{cls.MAX_VERSION})"
        )
    return table[version]


def _failure(cls: type[Message], version: int, action: str, exc: BaseException) -> ProtocolError:
    """Turn an exception raised inside generated code into a ProtocolError naming the field."""
    if isinstance(exc, ProtocolError):
        return exc
    where = None
    frame_locals: dict = {}
    tb = exc.__traceback__
    while tb is not None:
        table = tb.tb_frame.f_globals.get("_WHERE")
        if table is not None and tb.tb_lineno in table:
            where = table[tb.tb_lineno]
            frame_locals = tb.tb_frame.f_locals
        tb = tb.tb_next
    if isinstance(exc, (IndexError, struct.error)) and action == "decode":
        reason = "input is truncated"
    elif isinstance(exc, UnicodeDecodeError):
        reason = f"invalid UTF-8 ({exc.reason})"
    elif isinstance(exc, WireError):
        reason = str(exc)
    else:
        reason = f"{type(exc).__name__}: {exc}"
    text = f"{cls.NAME} v{version}: cannot {action}"
    if where is not None:
        text += f" {where}"
        if action == "decode" and "pos" in frame_locals:
            text += f" at byte {frame_locals['pos']}"
        if action == "encode" and "o" in frame_locals and "," not in where:
            attr = where.rsplit(".", 1)[-1]
            value = getattr(frame_locals["o"], attr, None)
            if value is None and not isinstance(exc, WireError):
                reason = "None is not allowed: the field is not nullable in this version"
            else:
                text += f"={_short_repr(value)}"
    return ProtocolError(f"{text}: {reason}")


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
