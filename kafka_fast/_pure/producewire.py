"""Pure-Python twin of ``kafka_fast._native._producewire``: Produce request framing and
Produce response parsing with ``struct``.

The same chunks and columns as the compiled module; ``nogil_bytes`` is accepted and counted
(``released_calls``) but the interpreter lock is never given up.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable
from typing import Any

NATIVE = False

_released = 0

_HHI = struct.Struct(">hhi")
_H = struct.Struct(">h")
_I = struct.Struct(">i")
_HI = struct.Struct(">hi")
_IHQ = struct.Struct(">ihq")
_Q = struct.Struct(">q")
_unpack_i32 = _I.unpack_from
_unpack_i16 = _H.unpack_from
_unpack_ihq = _IHQ.unpack_from
_unpack_q = _Q.unpack_from


def released_calls() -> int:
    """How many calls so far had at least their ``nogil_bytes`` of byte work (the calls the
    compiled module makes without the interpreter lock)."""
    return _released


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _utf8(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"{what} of {len(data)} bytes exceeds 32767")
    return data


def _string(out: bytearray, data: bytes, compact: bool) -> None:
    if compact:
        _uvarint(out, len(data) + 1)
    else:
        out += _H.pack(len(data))
    out += data


def _count(out: bytearray, n: int, compact: bool) -> None:
    if compact:
        _uvarint(out, n + 1)
    else:
        out += _I.pack(n)


def frame_produce(api_version: int, correlation_id: int, client_id: str | None,
                  transactional_id: str | None, acks: int, timeout_ms: int,
                  topics: Iterable[tuple[Any, Iterable[tuple[int, Any]]]], *,
                  header_version: int, flexible: bool, topic_ids: bool, inline_below: int,
                  nogil_bytes: int = -1) -> list:
    """The whole Produce request frame as a list of chunks for ``sendmsg`` (see the compiled
    module)."""
    global _released
    if header_version not in (1, 2):
        raise ValueError(f"Produce request header version {header_version} (1 or 2 expected)")
    if not (-0x8000 <= api_version <= 0x7FFF) or not (-0x8000 <= acks <= 0x7FFF):
        raise ValueError("api_version and acks must fit int16")
    out = bytearray(4)
    out += _HHI.pack(0, api_version, correlation_id)
    if client_id is None:
        out += b"\xff\xff"
    else:
        _string(out, _utf8(client_id, "client id"), False)
    if header_version == 2:
        out.append(0)
    if transactional_id is None:
        out += b"\x00" if flexible else b"\xff\xff"
    else:
        _string(out, _utf8(transactional_id, "transactional id"), flexible)
    out += _HI.pack(acks, timeout_ms)
    topic_list = list(topics)
    _count(out, len(topic_list), flexible)
    blobs: list[tuple[int, Any]] = []
    batches = 0
    for entry in topic_list:
        if not isinstance(entry, tuple) or len(entry) != 2:
            raise TypeError("each topic must be a (name_or_id, partitions) tuple")
        name, parts = entry
        if topic_ids:
            raw = memoryview(name).cast("B")
            if raw.nbytes != 16:
                raise ValueError(f"a topic id is 16 bytes, not {raw.nbytes}")
            out += raw
        else:
            _string(out, _utf8(name, "topic name"), flexible)
        parts = list(parts)
        _count(out, len(parts), flexible)
        for item in parts:
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError("each partition must be a (partition, batch) tuple")
            index, batch = item
            size = memoryview(batch).nbytes
            if size > 0x7FFFFFFE:
                raise ValueError(f"a batch of {size} bytes does not fit a request")
            out += _I.pack(index)
            if flexible:
                _uvarint(out, size + 1)
            else:
                out += _I.pack(size)
            if size < inline_below:
                out += batch
            else:
                blobs.append((len(out), batch))
                batches += size
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)
    small = len(out)
    if small - 4 + batches > 0x7FFFFFFF:
        raise ValueError(f"a Produce request of {small - 4 + batches} bytes exceeds the "
                         "largest frame")
    _I.pack_into(out, 0, small - 4 + batches)
    if 0 <= nogil_bytes <= small:
        _released += 1
    if not blobs:
        return [out]
    view = memoryview(out)
    chunks: list = []
    prev = 0
    for at, blob in blobs:
        if at > prev:
            chunks.append(view[prev:at])
        chunks.append(blob)
        prev = at
    if prev < small:
        chunks.append(view[prev:])
    return chunks


class _Fallback(Exception):
    """The columns cannot carry this response."""


class _Malformed(Exception):
    """The body is malformed (the message says how)."""


class _Reader:
    __slots__ = ("mv", "n", "pos", "flexible")

    def __init__(self, mv: memoryview, flexible: bool) -> None:
        self.mv = mv
        self.n = len(mv)
        self.pos = 0
        self.flexible = flexible

    def need(self, k: int) -> None:
        if self.n - self.pos < k:
            raise _Malformed("ends early")

    def uvarint(self) -> int:
        value = 0
        shift = 0
        while True:
            if self.pos >= self.n:
                raise _Malformed("ends early")
            b = self.mv[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if shift > 28:
                raise _Malformed("has an unsigned varint longer than 32 bits")
        if value >> 32:
            raise _Malformed("has an unsigned varint longer than 32 bits")
        return value

    def count(self, min_size: int) -> int:
        if self.flexible:
            u = self.uvarint()
            if u == 0:
                raise _Fallback
            n = u - 1
        else:
            self.need(4)
            (n,) = _unpack_i32(self.mv, self.pos)
            self.pos += 4
            if n < 0:
                if n == -1:
                    raise _Fallback
                raise _Malformed("has an array length larger than the bytes left")
        if n * min_size > self.n - self.pos:
            raise _Malformed("has an array length larger than the bytes left")
        return n

    def string(self) -> tuple[int, int]:
        """(start, length) of a string; start -1 for null."""
        if self.flexible:
            u = self.uvarint()
            if u == 0:
                return -1, 0
            length = u - 1
        else:
            self.need(2)
            (length,) = _unpack_i16(self.mv, self.pos)
            self.pos += 2
            if length < 0:
                if length != -1:
                    raise _Malformed("has a negative string length")
                return -1, 0
        if length > self.n - self.pos:
            raise _Malformed("ends early")
        at = self.pos
        self.pos += length
        return at, length

    def no_tags(self) -> None:
        if self.uvarint():
            raise _Fallback


def parse_produce_response(body: Any, *, flexible: bool, topic_ids: bool, append_time: bool,
                           start_offset: bool, record_errors: bool,
                           nogil_bytes: int = -1) -> tuple | None:
    """Walk a Produce response body into columns, or None when they cannot carry it (see the
    compiled module)."""
    global _released
    mv = memoryview(body).cast("B")
    if 0 <= nogil_bytes <= len(mv):
        _released += 1
    r = _Reader(mv, flexible)
    topics: list = []
    cols: tuple[array, ...] = (array("i"), array("i"), array("h"), array("q"), array("q"),
                               array("q"))
    t_col, p_col, e_col, b_col, lat_col, lso_col = cols
    fixed = 14 + (8 if append_time else 0) + (8 if start_offset else 0)
    min_part = fixed + ((2 if flexible else 6) if record_errors else 0) + (1 if flexible else 0)
    try:
        ntopics = r.count(2 if flexible else 6)
        for t in range(ntopics):
            if topic_ids:
                r.need(16)
                topics.append(bytes(mv[r.pos:r.pos + 16]))
                r.pos += 16
            else:
                at, length = r.string()
                if at < 0:
                    raise _Fallback
                topics.append(mv[at:at + length])  # decoded once the walk is done
            nparts = r.count(min_part)
            for _ in range(nparts):
                r.need(fixed)
                pos = r.pos
                index, code, base = _unpack_ihq(mv, pos)
                if code:
                    raise _Fallback
                t_col.append(t)
                p_col.append(index)
                e_col.append(code)
                b_col.append(base)
                lat_col.append(_unpack_q(mv, pos + 14)[0] if append_time else -1)
                lso_col.append(_unpack_q(mv, pos + 22)[0] if start_offset else -1)
                r.pos = pos + fixed
                if record_errors:
                    if r.count(1):
                        raise _Fallback
                    if r.string()[0] >= 0:
                        raise _Fallback
                if flexible:
                    r.no_tags()
            if flexible:
                r.no_tags()
        r.need(4)
        (throttle,) = _unpack_i32(mv, r.pos)
        r.pos += 4
        if flexible:
            r.no_tags()
    except _Fallback:
        return None
    except _Malformed as exc:
        raise ValueError(f"malformed ProduceResponse: the body of {len(mv)} bytes {exc} "
                         f"(at byte {r.pos})") from None
    if not topic_ids:
        try:
            topics = [str(name, "utf-8") for name in topics]
        except UnicodeDecodeError as exc:
            raise ValueError(f"malformed ProduceResponse: topic name is not UTF-8 ({exc})"
                             ) from None
    return (topics, *cols, throttle)
