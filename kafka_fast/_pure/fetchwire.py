"""Fetch responses (v4-v18) read into column arrays: pure-Python twin of
``kafka_fast._native._fetchwire`` (see its docstring for the columns)."""

from __future__ import annotations

import struct
from array import array
from typing import Any
from uuid import UUID

from kafka_fast.errors import ProtocolError

NATIVE = False
MIN_VERSION = 4
MAX_VERSION = 18

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_IHI = struct.Struct(">ihi").unpack_from
_HEAD4 = struct.Struct(">ihqq").unpack_from
_HEAD5 = struct.Struct(">ihqqq").unpack_from
_QQ = struct.Struct(">qq").unpack_from


class _Malformed(Exception):
    def __init__(self, detail: str, pos: int) -> None:
        super().__init__(detail)
        self.detail = detail
        self.pos = pos


class FetchWire:
    """One Fetch response in columns; ``len()`` is the number of partitions."""

    __slots__ = ("version", "throttle_time_ms", "error_code", "session_id", "topics",
                 "topic_index", "partition_index", "partition_error", "high_watermark",
                 "last_stable_offset", "log_start_offset", "preferred_read_replica",
                 "records_pos", "records_len", "aborted_start", "aborted_count", "aborted",
                 "buffer")

    def __init__(self, version: int, buffer: memoryview) -> None:
        self.version = version
        self.buffer = buffer
        self.throttle_time_ms = 0
        self.error_code = 0
        self.session_id = 0
        self.topics: list[Any] = []
        self.topic_index = array("i")
        self.partition_index = array("i")
        self.partition_error = array("h")
        self.high_watermark = array("q")
        self.last_stable_offset = array("q")
        self.log_start_offset = array("q")
        self.preferred_read_replica = array("i")
        self.records_pos = array("q")
        self.records_len = array("q")
        self.aborted_start = array("q")
        self.aborted_count = array("i")
        self.aborted = array("q")

    def __len__(self) -> int:
        return len(self.topic_index)

    def records(self, i: int) -> memoryview | None:
        """Partition ``i``'s records: a memoryview of the response (None if null)."""
        n = self.records_len[i]
        if n < 0:
            return None
        start = self.records_pos[i]
        return self.buffer[start:start + n]

    def aborted_transactions(self, i: int) -> list[tuple[int, int]] | None:
        """Partition ``i``'s aborted transactions (None for a null list)."""
        n = self.aborted_count[i]
        if n < 0:
            return None
        s = 2 * self.aborted_start[i]
        ab = self.aborted
        return [(ab[s + 2 * k], ab[s + 2 * k + 1]) for k in range(n)]


class _Reader:
    __slots__ = ("mv", "n", "pos")

    def __init__(self, mv: memoryview) -> None:
        self.mv = mv
        self.n = len(mv)
        self.pos = 0

    def need(self, k: int, what: str) -> None:
        if self.n - self.pos < k:
            raise _Malformed(f"{what} needs {k} bytes, {self.n - self.pos} left", self.pos)

    def uvarint(self, what: str) -> int:
        value = shift = 0
        while shift <= 28:
            if self.pos >= self.n:
                raise _Malformed(f"{what} needs 1 bytes, 0 left", self.pos)
            b = self.mv[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                if value > 0xFFFFFFFF:
                    raise _Malformed(f"{what}: unsigned varint exceeds 32 bits", self.pos)
                return value
            shift += 7
        raise _Malformed(f"{what}: unsigned varint longer than 5 bytes", self.pos)

    def count(self, flexible: bool, nullable: bool, size: int, what: str) -> int:
        if flexible:
            n = self.uvarint(what) - 1
        else:
            self.need(4, what)
            (n,) = _I32(self.mv, self.pos)
            self.pos += 4
            if n < -1:
                raise _Malformed(f"negative {what} length {n}", self.pos)
        if n == -1:
            if not nullable:
                raise _Malformed(f"null {what} where the field is not nullable", self.pos)
            return -1
        if n * size > self.n - self.pos:
            raise _Malformed(f"{n} {what} exceed the {self.n - self.pos} bytes left", self.pos)
        return n


def _read_tags(r: _Reader, known: frozenset[int], endpoints: bool) -> bool:
    """A tagged-field section: True when it holds one of the ``known`` tags, or node
    endpoints (tag 0 with ``endpoints``) other than an empty array (see the compiled
    module); with neither, the section is only skipped."""
    n = r.uvarint("tagged field count")
    if n > r.n - r.pos:
        raise _Malformed(f"{n} tagged fields exceed the {r.n - r.pos} bytes left", r.pos)
    found = False
    for _ in range(n):
        tag = r.uvarint("tagged field tag")
        size = r.uvarint("tagged field size")
        r.need(size, "tagged field")
        end = r.pos + size
        if endpoints and tag == 0:
            whole, r.n = r.n, end
            u = r.uvarint("node endpoints")
            r.n = whole
            if u == 0:
                raise _Malformed("null node endpoints where the field is not nullable", r.pos)
            found = found or u > 1
        elif tag in known:
            found = True
        r.pos = end
    return found


_PARTITION_TAGS = frozenset({0, 1, 2})  # diverging epoch, current leader, snapshot id
_NO_TAGS: frozenset[int] = frozenset()


def parse_fetch(body: Any, version: int, nogil_bytes: int = -1) -> FetchWire | None:
    """``body`` (a FetchResponse after its header) at ``version`` as a ``FetchWire``, or None
    when it carries tagged fields the columns do not hold (``nogil_bytes``: as the compiled
    reader's; Python keeps the interpreter lock)."""
    if version < MIN_VERSION or version > MAX_VERSION:
        raise ValueError(f"FetchResponse v{version} is not read here "
                         f"(v{MIN_VERSION}-v{MAX_VERSION})")
    mv = memoryview(body)
    if mv.ndim != 1 or mv.itemsize != 1 or mv.format != "B":
        mv = mv.cast("B")
    r = _Reader(mv)
    w = FetchWire(version, mv)
    try:
        if not _parse(r, version, w):
            return None
        if version < 13:
            w.topics = [str(name, "utf-8") for name in w.topics]
    except _Malformed as exc:
        raise ProtocolError(f"FetchResponse v{version}: {exc.detail} (at byte {exc.pos})"
                            ) from None
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"FetchResponse v{version}: topic name is not UTF-8 ({exc})"
                            ) from None
    return w


def _parse(r: _Reader, version: int, w: FetchWire) -> bool:
    """Fill ``w``; False if the response carries tagged fields."""
    flexible = version >= 12
    mv = r.mv
    if version >= 7:
        r.need(10, "throttle time, error code, session id")
        w.throttle_time_ms, w.error_code, w.session_id = _IHI(mv, r.pos)
        r.pos += 10
    else:
        r.need(4, "throttle time")
        (w.throttle_time_ms,) = _I32(mv, r.pos)
        r.pos += 4
    ntopics = r.count(flexible, False, 1, "topics")
    for t in range(ntopics):
        if version >= 13:
            r.need(16, "topic id")
            w.topics.append(UUID(bytes=bytes(mv[r.pos:r.pos + 16])))
            r.pos += 16
        else:
            if flexible:
                u = r.uvarint("topic name length")
                if u == 0:
                    raise _Malformed("null topic name where the field is not nullable", r.pos)
                length = u - 1
            else:
                r.need(2, "topic name length")
                (length,) = _I16(mv, r.pos)
                r.pos += 2
                if length < 0:
                    raise _Malformed("null topic name where the field is not nullable", r.pos)
            r.need(length, "topic name")
            w.topics.append(mv[r.pos:r.pos + length])  # decoded once the walk is done
            r.pos += length
        nparts = r.count(flexible, False, 1, "partitions")
        for _ in range(nparts):
            if version >= 5:
                r.need(30, "partition header")
                partition, error, hw, lso, lss = _HEAD5(mv, r.pos)
                r.pos += 30
            else:
                r.need(22, "partition header")
                partition, error, hw, lso = _HEAD4(mv, r.pos)
                lss = -1
                r.pos += 22
            nab = r.count(flexible, True, 17 if flexible else 16, "aborted transactions")
            w.aborted_start.append(len(w.aborted) // 2)
            w.aborted_count.append(nab)
            for _ in range(nab):
                r.need(16, "aborted transaction")
                w.aborted.extend(_QQ(mv, r.pos))
                r.pos += 16
                if flexible:
                    _read_tags(r, _NO_TAGS, False)
            replica = -1
            if version >= 11:
                r.need(4, "preferred read replica")
                (replica,) = _I32(mv, r.pos)
                r.pos += 4
            if flexible:
                length = r.uvarint("records length") - 1
            else:
                r.need(4, "records length")
                (length,) = _I32(mv, r.pos)
                r.pos += 4
                if length < -1:
                    raise _Malformed(f"negative records length {length}", r.pos)
            if length >= 0:
                r.need(length, "records")
            w.topic_index.append(t)
            w.partition_index.append(partition)
            w.partition_error.append(error)
            w.high_watermark.append(hw)
            w.last_stable_offset.append(lso)
            w.log_start_offset.append(lss)
            w.preferred_read_replica.append(replica)
            w.records_pos.append(r.pos)
            w.records_len.append(length)
            if length > 0:
                r.pos += length
            if flexible and _read_tags(r, _PARTITION_TAGS, False):
                return False
        if flexible:
            _read_tags(r, _NO_TAGS, False)
    return not (flexible and _read_tags(r, _NO_TAGS, version >= 16))
