"""Kafka record batches (magic 2) and legacy message sets (magic 0/1): pure-Python twin.

Same API as the compiled ``kafka_fast._native._records``; the public entry point is
``kafka_fast.records``, which documents the conventions (packed columns, nulls, headers).
The wire format, ``Columns`` and the legacy (magic 0/1) reader are shared by both
implementations and live in ``kafka_fast.records``.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from kafka_fast.codecs import compression
from kafka_fast.codecs.crc import crc32c as _crc32c
from kafka_fast.errors import CorruptRecordError
from kafka_fast.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
)
from kafka_fast.records.buffers import byte_view, destination
from kafka_fast.records.columns import Columns, pack_column
from kafka_fast.records.format import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_LEGACY_LENGTH,
    MIN_RECORD_SIZE,
    MIN_V2_LENGTH,
)
from kafka_fast.records.legacy import LegacyRecordBatch

from .varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
    zigzag_decode,
    zigzag_encode,
)

__all__ = [
    "Columns",
    "LegacyRecordBatch",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "decode_batches",
    "decode_varint",
    "decode_varlong",
    "encode_batch",
    "encode_varint",
    "encode_varlong",
    "patch_producer_fields",
    "size_of_varint",
    "zigzag_decode",
    "zigzag_encode",
]

_PRODUCER_FIELDS = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence at byte 43
_PRODUCER_AT = 43


def _i64(x: int) -> int:
    """Wrap to int64 as the compiled reader does for forged offsets/timestamps."""
    return ((x + (1 << 63)) & 0xFFFFFFFFFFFFFFFF) - (1 << 63)


def now_ms() -> int:
    """Current wall-clock time in milliseconds (the timestamp of records given none)."""
    return time.time_ns() // 1_000_000


class Record:
    """One decoded record: ``offset, timestamp, key, value, headers``."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers

    def _tuple(self) -> tuple:
        return (self.offset, self.timestamp, self.key, self.value, self.headers)

    def __eq__(self, other: object) -> bool:
        try:
            return self._tuple() == (
                other.offset,  # type: ignore[attr-defined]
                other.timestamp,  # type: ignore[attr-defined]
                other.key,  # type: ignore[attr-defined]
                other.value,  # type: ignore[attr-defined]
                other.headers,  # type: ignore[attr-defined]
            )
        except AttributeError:
            return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )


# ---------------------------------------------------------------------------------------------
# input normalisation (values, keys, timestamps, headers)


def _is_packed(obj: Any) -> bool:
    return (
        isinstance(obj, tuple)
        and len(obj) in (2, 3)
        and isinstance(obj[1], np.ndarray)
        and obj[1].ndim == 1
    )


class _BadOffsets:
    """A packed record whose offsets lie outside the data (raised when it is encoded)."""

    def __init__(self, message: str) -> None:
        self.message = message


def _check_encoded(fields: list) -> None:
    for f in fields:
        if type(f) is _BadOffsets:
            raise ValueError(f.message)


def _column(obj: Any, what: str) -> list:
    """A values/keys argument as a list of bytes-like/None."""
    if _is_packed(obj):
        data, offsets = obj[0], obj[1]
        nulls = obj[2] if len(obj) == 3 else None
        if offsets.dtype != np.int64:
            raise TypeError(f"{what}: packed offsets must be an int64 array")
        raw = byte_view(data, f"{what}: packed data")
        n = len(offsets) - 1
        if n < 0:
            raise ValueError(f"{what}: packed offsets need N+1 entries")
        if nulls is not None and len(nulls) != n:
            raise ValueError(f"{what}: null mask has {len(nulls)} entries for {n} records")
        out: list[bytes | memoryview | _BadOffsets | None] = []
        for i in range(n):
            a, b = int(offsets[i]), int(offsets[i + 1])
            if not 0 <= a <= b <= len(raw):  # an error only if this record is encoded
                out.append(_BadOffsets(
                    f"{what}: packed offsets[{i}:{i + 2}] = ({a}, {b}) outside 0..{len(raw)}"))
            else:
                out.append(None if nulls is not None and nulls[i] else raw[a:b])
        return out
    if isinstance(obj, np.ndarray):
        if obj.ndim != 2 or obj.dtype != np.uint8:
            raise TypeError(f"{what}: a numpy array must be 2-D uint8 (one row per record)")
        arr = np.ascontiguousarray(obj)
        return [arr[i].tobytes() for i in range(arr.shape[0])]
    if isinstance(obj, (bytes, bytearray, memoryview, str)):
        raise TypeError(f"{what} must be a sequence of records, not a single {type(obj).__name__}")
    out = []
    for i, v in enumerate(obj):
        if v is None:
            out.append(None)
        elif isinstance(v, str):
            raise TypeError(f"{what}[{i}] is a str; encode it to bytes first")
        else:
            out.append(v if type(v) is bytes else byte_view(v, f"{what}[{i}]"))
    return out


def _timestamps(ts: Any, n: int) -> list[int]:
    if ts is None:
        return [now_ms()] * n
    if isinstance(ts, (int, np.integer)) and not isinstance(ts, bool):
        return [int(ts)] * n
    out = [int(t) for t in ts]
    if len(out) != n:
        raise ValueError(f"timestamps has {len(out)} entries for {n} records")
    return out


def _headers(headers: Any, n: int) -> list:
    """Shared headers (a dict or a list of (key, value) tuples) or one set (or None) per
    record."""
    if headers is None or len(headers) == 0:
        return [[]] * n
    if isinstance(headers, dict) or isinstance(headers[0], tuple):
        return [headers] * n
    if len(headers) != n:
        raise ValueError(f"headers has {len(headers)} per-record lists for {n} records")
    return [h or [] for h in headers]


def _header_bytes(x: Any, key: Any, what: str) -> bytes:
    """A header key or value as bytes: str (utf-8) or a contiguous bytes-like object."""
    if isinstance(x, bytes):
        return bytes(x) if type(x) is not bytes else x
    if isinstance(x, str):
        return x.encode("utf-8")
    if not isinstance(x, (int, float, np.generic)):
        try:
            with memoryview(x) as view:
                if view.c_contiguous:
                    return view.tobytes()
        except TypeError:
            pass
    raise TypeError(f"header {key!r}: {what} must be bytes-like, str or None, "
                    f"not {type(x).__name__}")


def _encode_headers(headers: Any) -> bytes:
    """Count and entries of a dict or a list of (key, value) tuples."""
    if isinstance(headers, dict):
        headers = list(headers.items())
    elif not isinstance(headers, (list, tuple)):
        try:
            headers = list(headers)
        except TypeError:
            raise TypeError("headers must be a dict or a list of (key, value) tuples, "
                            f"not {type(headers).__name__}") from None
    parts = [encode_varint(len(headers))]
    for item in headers:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"a header must be a (key, value) tuple, got {item!r}")
        k, v = item
        kb = _header_bytes(k, k, "key")
        parts.append(encode_varint(len(kb)))
        parts.append(kb)
        if v is None:
            parts.append(encode_varint(-1))
        else:
            vb = _header_bytes(v, k, "value")
            parts.append(encode_varint(len(vb)))
            parts.append(vb)
    return b"".join(parts)


def _encode_record(offset_delta: int, ts_delta: int, key: Any, value: Any, headers: Any) -> bytes:
    parts = [b"\x00", encode_varlong(ts_delta), encode_varint(offset_delta)]
    for field in (key, value):
        if field is None:
            parts.append(b"\x01")  # zigzag(-1)
        else:
            parts.append(encode_varint(len(field)))
            parts.append(bytes(field))
    parts.append(_encode_headers(headers) if headers else b"\x00")
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _attributes(codec: int, transactional: bool) -> int:
    return codec | (ATTR_TRANSACTIONAL if transactional else 0)


def _assemble(
    records: bytes,
    count: int,
    codec: int,
    level: int | None,
    base_offset: int,
    first_ts: int,
    max_ts: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool,
    partition_leader_epoch: int,
) -> bytes:
    payload = compression.compress(codec, records, level) if codec else records
    header = bytearray(
        HEADER.pack(
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(payload),
            partition_leader_epoch,
            2,
            0,
            _attributes(codec, transactional),
            count - 1,
            first_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    crc = _crc32c(bytes(header[CRC_START:]) + payload)
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + payload


def encode_batch(
    values: Any,
    keys: Any = None,
    *,
    timestamps: Any = None,
    headers: Any = None,
    compression: str | int = "none",
    compression_level: int | None = None,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    partition_leader_epoch: int = -1,
    rows: Any = None,
    into: Any = None,
) -> Any:
    """Encode one complete RecordBatch (magic 2) holding every given record, or with
    ``rows`` (integer indices) the records at those rows of the columns, timestamps and
    per-record headers, in that order. With ``into`` (a callable taking the batch's size and
    returning a writable buffer at least that large) the batch is written into that buffer and
    a memoryview of exactly its bytes is returned instead of a new bytes object."""
    from kafka_fast.codecs import compression as _codecs

    codec = _codecs.codec_id(compression)
    if values is None:
        raise TypeError("values must be given (use a list with None for null values)")
    vals = _column(values, "values")
    n = len(vals)
    ks = [None] * n if keys is None else _column(keys, "keys")
    if len(ks) != n:
        raise ValueError(f"keys has {len(ks)} entries for {n} values")
    ts = _timestamps(timestamps, n)
    hs = _headers(headers, n)
    if rows is not None:
        picked = np.asarray(rows, dtype=np.int64)
        if picked.ndim != 1:
            raise ValueError("rows must be a 1-D sequence of record indices")
        for i, r in enumerate(picked.tolist()):
            if r < 0 or r >= n:
                raise IndexError(f"rows[{i}] = {r} is outside the {n} records")
        order = picked.tolist()
        vals, ks = [vals[r] for r in order], [ks[r] for r in order]
        ts, hs = [ts[r] for r in order], [hs[r] for r in order]
        n = len(order)
    _check_encoded(vals)
    _check_encoded(ks)
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    first = ts[0]
    records = b"".join(
        _encode_record(i, _i64(ts[i] - first), ks[i], vals[i], hs[i]) for i in range(n)
    )
    batch = _assemble(
        records, n, codec, compression_level, base_offset, first, max(ts),
        producer_id, producer_epoch, base_sequence, transactional, partition_leader_epoch,
    )
    return batch if into is None else _write_into(into, batch)


def _write_into(into: Any, batch: bytes) -> memoryview:
    """``batch`` copied to the start of the writable buffer ``into(len(batch))`` returns; a
    memoryview of exactly those bytes."""
    out = destination(into, len(batch))
    out[:] = batch
    return out


class RecordBatchBuilder:
    """Builds one RecordBatch record by record; ``append`` returns False once it is full."""

    def __init__(
        self,
        compression: str | int = "none",
        batch_size: int = 1_048_576,
        compression_level: int | None = None,
        base_offset: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        partition_leader_epoch: int = -1,
    ) -> None:
        from kafka_fast.codecs import compression as _codecs

        self._codec = _codecs.codec_id(compression)
        self._level = compression_level
        self._batch_size = batch_size
        self._base_offset = base_offset
        self._partition_leader_epoch = partition_leader_epoch
        self.set_producer_state(producer_id, producer_epoch, base_sequence, transactional)
        self._parts: list[bytes] = []
        self._size = HEADER_SIZE
        self._first_ts = 0
        self._max_ts = -1
        self._built: bytes | None = None

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool = False
    ) -> None:
        """Producer id, epoch, first sequence and transactional flag written by ``build``."""
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._transactional = bool(transactional)

    def append(
        self,
        value: Any,
        key: Any = None,
        timestamp: int | None = None,
        headers: Sequence | None = None,
    ) -> bool:
        """Add a record; False (and nothing added) if it would overflow ``batch_size``."""
        if self._built is not None:
            raise RuntimeError("the batch was already built")
        for name, field in (("value", value), ("key", key)):
            if isinstance(field, str):
                raise TypeError(f"{name} is a str; encode it to bytes first")
        ts = now_ms() if timestamp is None else int(timestamp)
        if not self._parts:
            self._first_ts = ts
        rec = _encode_record(
            len(self._parts),
            _i64(ts - self._first_ts),
            None if key is None else byte_view(key, "key"),
            None if value is None else byte_view(value, "value"),
            headers,
        )
        if self._parts and self._size + len(rec) > self._batch_size:
            return False
        self._parts.append(rec)
        self._size += len(rec)
        if ts > self._max_ts or len(self._parts) == 1:
            self._max_ts = ts
        return True

    def __len__(self) -> int:
        return len(self._parts)

    @property
    def size_in_bytes(self) -> int:
        """Bytes the batch holds so far, uncompressed, header included."""
        return self._size

    def build(self) -> bytes:
        """The finished batch (the builder accepts no more records afterwards)."""
        if self._built is None:
            if not self._parts:
                raise ValueError("a record batch needs at least one record")
            self._built = _assemble(
                b"".join(self._parts), len(self._parts), self._codec, self._level,
                self._base_offset, self._first_ts, self._max_ts, self._producer_id,
                self._producer_epoch, self._base_sequence, self._transactional,
                self._partition_leader_epoch,
            )
            self._parts = []
        return self._built


def patch_producer_fields(
    buf: Any,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    transactional: bool | None = None,
    in_place: bool = False,
) -> Any:
    """A copy of one built batch with new producer id/epoch/base sequence (and optionally the
    transactional flag), its CRC recomputed; with ``in_place`` the writable buffer ``buf``
    itself is patched (after every check passed) and returned."""
    if in_place:
        view = byte_view(buf)
        if view.readonly:
            raise TypeError("patch_producer_fields(in_place=True) needs a writable buffer")
        out = bytearray(view)  # patched here, then written back whole
    else:
        out = bytearray(buf)
    if len(out) < HEADER_SIZE or out[16] != 2:
        raise ValueError("not a magic 2 record batch")
    (length,) = struct.unpack_from(">i", out, 8)
    if length + LOG_OVERHEAD != len(out):
        raise ValueError(f"batch length field {length} does not match {len(out)} bytes")
    _PRODUCER_FIELDS.pack_into(out, _PRODUCER_AT, producer_id, producer_epoch, base_sequence)
    if transactional is not None:
        (attrs,) = struct.unpack_from(">h", out, 21)
        attrs = (attrs | ATTR_TRANSACTIONAL) if transactional else (attrs & ~ATTR_TRANSACTIONAL)
        struct.pack_into(">h", out, 21, attrs)
    struct.pack_into(">I", out, 17, _crc32c(memoryview(out)[CRC_START:]))
    if in_place:
        view[:HEADER_SIZE] = out[:HEADER_SIZE]  # only the header changed
        return buf
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# decoding


def _records_limit(count: int, nbytes: int, where: int) -> None:
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}", where)
    if count * MIN_RECORD_SIZE > nbytes:
        raise CorruptRecordError(
            f"record count {count} cannot fit in {nbytes} bytes of records", where
        )


def _parse_records(buf, pos: int, end: int, count: int, base: int):
    """Yield (offset_delta, ts_delta, key, value, headers) for ``count`` records in buf[pos:end].

    ``base`` is added to positions in error messages.
    """
    for _ in range(count):
        if pos >= end:
            raise CorruptRecordError("truncated record: fewer records than the batch declares",
                                     base + pos)
        length, p = decode_varint(buf, pos, end)
        if length < 0:
            raise CorruptRecordError(f"negative record length {length}", base + pos)
        rend = p + length
        if rend > end:
            raise CorruptRecordError(f"record length {length} beyond the batch", base + pos)
        if p >= rend:
            raise CorruptRecordError("truncated record", base + p)
        p += 1  # attributes (unused)
        ts_delta, p = decode_varlong(buf, p, rend)
        off_delta, p = decode_varint(buf, p, rend)
        fields: list[bytes | None] = []
        for what in ("key", "value"):
            at = p
            n, p = decode_varint(buf, p, rend)
            if n == -1:
                fields.append(None)
                continue
            if n < -1:
                raise CorruptRecordError(f"negative {what} length {n}", base + at)
            if n > rend - p:
                raise CorruptRecordError(f"{what} length {n} beyond the record", base + at)
            fields.append(bytes(buf[p : p + n]))
            p += n
        at = p
        hcount, p = decode_varint(buf, p, rend)
        if hcount < 0:
            raise CorruptRecordError(f"negative header count {hcount}", base + at)
        if hcount * 2 > rend - p:
            raise CorruptRecordError(f"header count {hcount} beyond the record", base + at)
        headers = []
        for _h in range(hcount):
            at = p
            n, p = decode_varint(buf, p, rend)
            if n < 0:
                raise CorruptRecordError(f"bad header key length {n}", base + at)
            if n > rend - p:
                raise CorruptRecordError(f"header key length {n} beyond the record", base + at)
            hkey = bytes(buf[p : p + n]).decode("utf-8", "replace")
            p += n
            at = p
            n, p = decode_varint(buf, p, rend)
            if n < -1:
                raise CorruptRecordError(f"negative header value length {n}", base + at)
            if n == -1:
                hval = None
            else:
                if n > rend - p:
                    raise CorruptRecordError(
                        f"header value length {n} beyond the record", base + at
                    )
                hval = bytes(buf[p : p + n])
                p += n
            headers.append((hkey, hval))
        if p != rend:
            raise CorruptRecordError(
                f"record declares {length} bytes but its fields use {p - rend + length}", base + p
            )
        pos = rend
        yield off_delta, ts_delta, fields[0], fields[1], headers
    if pos != end:
        raise CorruptRecordError(
            f"{end - pos} bytes left after the {count} records the batch declares", base + pos
        )


class RecordBatch:
    """A decoded RecordBatch (magic 2) header; records are parsed on ``records()``/``columns()``."""

    magic = 2

    def __init__(self, view: memoryview, pos: int, length: int, verify_crc: bool,
                 budget: compression.DecompressionBudget | None = None) -> None:
        (
            self.base_offset,
            _length,
            self.partition_leader_epoch,
            _magic,
            crc,
            attrs,
            self.last_offset_delta,
            self.first_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self._count,
        ) = HEADER.unpack_from(view, pos)
        end = pos + LOG_OVERHEAD + length
        if verify_crc:
            actual = _crc32c(view[pos + CRC_START : end])
            if actual != crc:
                raise CorruptRecordError(
                    f"record batch CRC mismatch: stored {crc:#010x}, computed {actual:#010x}", pos
                )
        self.compression = attrs & ATTR_COMPRESSION_MASK
        if self.compression > compression.ZSTD:
            raise CorruptRecordError(f"unknown compression code {self.compression}", pos + 21)
        self.attributes = attrs
        self.timestamp_type = (
            TIMESTAMP_LOG_APPEND_TIME if attrs & ATTR_LOG_APPEND_TIME else TIMESTAMP_CREATE_TIME
        )
        self.is_transactional = bool(attrs & ATTR_TRANSACTIONAL)
        self.is_control = bool(attrs & ATTR_CONTROL)
        if self._count < 0:
            raise CorruptRecordError(f"negative record count {self._count}", pos + 57)
        self.byte_size = LOG_OVERHEAD + length
        self.next_offset = _i64(self.base_offset + self.last_offset_delta + 1)
        self.crc = crc
        self._view = view
        self._pos = pos
        self._end = end
        self._budget = budget

    def __len__(self) -> int:
        """Number of records the batch declares."""
        return self._count

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, records={self._count}, "
            f"compression={compression.CODEC_NAMES[self.compression]}, bytes={self.byte_size})"
        )

    def _parsed(self) -> list:
        start = self._pos + HEADER_SIZE
        if self.compression == compression.NONE:
            _records_limit(self._count, self._end - start, self._pos + 57)
            return list(_parse_records(self._view, start, self._end, self._count, 0))
        try:
            # charged once: decoding the same batch again costs the record set nothing
            lease = compression.decompress_pooled(self.compression, self._view[start : self._end],
                                                  budget=self._budget)
            self._budget = None
        except CorruptRecordError as exc:
            raise type(exc)(exc.args[0].str(), self._pos) from None
        with lease:
            raw = lease.view
            _records_limit(self._count, len(raw), self._pos + 57)
            try:
                return list(_parse_records(raw, 0, len(raw), self._count, 0))
            except CorruptRecordError as exc:
                raise CorruptRecordError(
                    f"{exc.args[0].str()} in decompressed records", self._pos
                ) from None

    def _timestamp(self, ts_delta: int) -> int:
        if self.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
            return self.max_timestamp
        return _i64(self.first_timestamp + ts_delta)

    def records(self) -> list[Record]:
        """Every record as a ``Record`` object."""
        base = self.base_offset
        return [
            Record(_i64(base + od), self._timestamp(td), k, v, h)
            for od, td, k, v, h in self._parsed()
        ]

    def columns(self, defer: bool = False) -> Columns:
        """Every record as packed columns (``Columns``; ``defer`` changes nothing here: the
        records are parsed into Python objects first anyway)."""
        parsed = self._parsed()
        offsets = np.array([_i64(self.base_offset + p[0]) for p in parsed], dtype=np.int64)
        timestamps = np.array([self._timestamp(p[1]) for p in parsed], dtype=np.int64)
        keys, key_nulls = pack_column([p[2] for p in parsed])
        values, value_nulls = pack_column([p[3] for p in parsed])
        headers = [p[4] for p in parsed] if any(p[4] for p in parsed) else None
        return Columns(offsets, timestamps, keys, values, key_nulls, value_nulls, headers)


class _LegacyRecordBatch(LegacyRecordBatch):
    __doc__ = LegacyRecordBatch.__doc__
    record_type = Record


def next_batch_bounds(view, pos: int, allow_partial: bool) -> tuple[int, int] | None:
    """(length, magic) of the batch at ``pos``, or None when only a partial batch is left."""
    n = len(view) - pos
    if n < LOG_OVERHEAD:
        if allow_partial:
            return None
        raise CorruptRecordError(f"truncated batch: {n} bytes left", pos)
    (length,) = struct.unpack_from(">i", view, pos + 8)
    if length < MIN_LEGACY_LENGTH:
        raise CorruptRecordError(f"batch length {length} below the minimum", pos + 8)
    if length > n - LOG_OVERHEAD:
        if allow_partial:
            return None
        raise CorruptRecordError(
            f"truncated batch: length {length} but {n - LOG_OVERHEAD} bytes left", pos
        )
    magic = view[pos + 16]
    if magic == 2 and length < MIN_V2_LENGTH:
        raise CorruptRecordError(f"batch length {length} below the magic 2 minimum", pos + 8)
    if magic > 2:
        raise CorruptRecordError(f"unknown magic {magic}", pos + 16)
    return length, magic


#: Bytes from which the compiled ``decode_batches`` checks CRCs in one pass without the GIL.
_CRC_PASS_MIN = 8 << 20
_nogil_crc_passes = 0


def nogil_crc_passes() -> int:
    """How many ``decode_batches`` calls so far checked CRCs of 8 MiB or more of batches (the
    compiled module does those in one pass without the GIL)."""
    return _nogil_crc_passes


def decode_batches(
    data: Any,
    *,
    verify_crc: bool = True,
    allow_partial: bool = True,
    budget: compression.DecompressionBudget | None = None,
) -> list[RecordBatch | LegacyRecordBatch]:
    """Every complete batch in ``data``; a trailing partial batch is ignored unless
    ``allow_partial`` is False (then it raises ``CorruptRecordError``). Every decompression of
    these batches draws from ``budget`` (a new ``DecompressionBudget()`` if None)."""
    global _nogil_crc_passes
    view = byte_view(data)
    if verify_crc and len(view) >= _CRC_PASS_MIN:
        _nogil_crc_passes += 1
    if budget is None:
        budget = compression.DecompressionBudget()
    out: list[RecordBatch | LegacyRecordBatch] = []
    pos = 0
    while pos < len(view):
        bounds = next_batch_bounds(view, pos, allow_partial)
        if bounds is None:
            break
        length, magic = bounds
        cls = RecordBatch if magic == 2 else _LegacyRecordBatch
        out.append(cls(view, pos, length, verify_crc, budget))
        pos += LOG_OVERHEAD + length
    return out
