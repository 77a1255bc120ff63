"""Readers and writers for the Kafka protocol's primitive types.

Readers take ``(mv, pos)`` where ``mv`` is a one-dimensional byte memoryview and return
``(value, new_pos)``. Every length is checked against the bytes that remain before anything is
sliced or allocated; bad input raises :class:`WireError` (or ``IndexError`` / ``struct.error`` on
a truncated fixed-size field), which :mod:`kafka_fast.protocol.base` turns into a
``ProtocolError`` naming the message, version and field.

Writers take ``(out, blobs, value)`` and append to the bytearray ``out``. Large ``records``
values are not copied: ``(len(out), value)`` is appended to ``blobs`` so the caller can send the
value as its own chunk.
"""

from __future__ import annotations

import struct
from uuid import UUID

__all__ = [
    "RECORDS_CHUNK_MIN", "ZERO_UUID", "Fixed", "WireError",
    "read_uvarint", "write_uvarint", "read_uuid", "write_uuid",
    "read_string", "read_nullable_string", "read_compact_string", "read_compact_nullable_string",
    "write_string", "write_nullable_string", "write_compact_string",
    "write_compact_nullable_string",
    "read_bytes", "read_nullable_bytes", "read_compact_bytes", "read_compact_nullable_bytes",
    "write_bytes", "write_nullable_bytes", "write_compact_bytes", "write_compact_nullable_bytes",
    "read_records", "read_nullable_records", "read_compact_records",
    "read_compact_nullable_records",
    "write_records", "write_nullable_records", "write_compact_records",
    "write_compact_nullable_records",
    "read_array", "read_nullable_array", "read_compact_array", "read_compact_nullable_array",
    "write_array", "write_nullable_array", "write_compact_array", "write_compact_nullable_array",
    "read_nullable_struct", "write_nullable_struct",
    "read_tags", "write_tags",
]

#: ``records`` values at least this large are passed through as separate chunks.
RECORDS_CHUNK_MIN = 1024

ZERO_UUID = UUID(int=0)

_i16 = struct.Struct(">h")
_i32 = struct.Struct(">i")
_unpack_i16 = _i16.unpack_from
_unpack_i32 = _i32.unpack_from
_pack_i16 = _i16.pack
_pack_i32 = _i32.pack
_pack_2b = struct.Struct("BB").pack
_pack_3b = struct.Struct("BBB").pack
_NULL16 = b"\xff\xff"
_NULL32 = b"\xff\xff\xff\xff"


class WireError(ValueError):
    """Malformed protocol data or a value that cannot be encoded."""


class Fixed:
    """A fixed-width element type of an array, read and written in bulk with ``struct``."""

    __slots__ = ("code", "size")

    def __init__(self, code: str, size: int) -> None:
        self.code = code
        self.size = size

    def __repr__(self) -> str:
        return f"Fixed({self.code!r}, {self.size})"


# ---------------------------------------------------------------- varints and uuid

def read_uvarint(mv, pos):
    """An unsigned 32-bit varint."""
    b = mv[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    for shift in (7, 14, 21, 28):
        pos += 1
        b = mv[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise WireError("unsigned varint exceeds 32 bits")
            return value, pos + 1
    raise WireError("unsigned varint longer than 5 bytes")


def write_uvarint(out, value):
    """Append an unsigned 32-bit varint."""
    if value < 0x80:
        if value < 0:
            raise WireError(f"negative value {value} for an unsigned varint")
        out.append(value)
    elif value < 0x4000:
        out += _pack_2b((value & 0x7F) | 0x80, value >> 7)
    elif value < 0x200000:
        out += _pack_3b((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14)
    else:
        if value > 0xFFFFFFFF:
            raise WireError(f"value {value} does not fit an unsigned 32-bit varint")
        while value >= 0x80:
            out.append((value & 0x7F) | 0x80)
            value >>= 7
        out.append(value)


def read_uuid(mv, pos):
    end = pos + 16
    if end > len(mv):
        raise WireError(f"uuid needs 16 bytes, {len(mv) - pos} left")
    return UUID(bytes=bytes(mv[pos:end])), end


def write_uuid(out, blobs, value):
    out += value.bytes


# ---------------------------------------------------------------- lengths

def _check(mv, pos, n, what):
    if n < 0:
        raise WireError(f"null {what} where the field is not nullable")
    end = pos + n
    if end > len(mv):
        raise WireError(f"{what} length {n} exceeds the {len(mv) - pos} bytes left")
    return end


def _nullable_check(mv, pos, n, what):
    end = pos + n
    if end > len(mv):
        raise WireError(f"{what} length {n} exceeds the {len(mv) - pos} bytes left")
    if n < -1:
        raise WireError(f"negative {what} length {n}")
    return end


# ---------------------------------------------------------------- strings

def read_string(mv, pos):
    (n,) = _unpack_i16(mv, pos)
    pos += 2
    end = _check(mv, pos, n, "string")
    return str(mv[pos:end], "utf-8"), end


def read_nullable_string(mv, pos):
    (n,) = _unpack_i16(mv, pos)
    pos += 2
    if n == -1:
        return None, pos
    end = _nullable_check(mv, pos, n, "string")
    return str(mv[pos:end], "utf-8"), end


def read_compact_string(mv, pos):
    n = mv[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(mv, pos)
    end = _check(mv, pos, n - 1, "string")
    return str(mv[pos:end], "utf-8"), end


def read_compact_nullable_string(mv, pos):
    n = mv[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(mv, pos)
    if n == 0:
        return None, pos
    end = _check(mv, pos, n - 1, "string")
    return str(mv[pos:end], "utf-8"), end


def _utf8(value):
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise WireError(f"string of {len(data)} bytes exceeds 32767")
    return data


def write_string(out, blobs, value):
    data = _utf8(value)
    out += _pack_i16(len(data))
    out += data


def write_nullable_string(out, blobs, value):
    if value is None:
        out += _NULL16
    else:
        data = _utf8(value)
        out += _pack_i16(len(data))
        out += data


def write_compact_string(out, blobs, value):
    data = _utf8(value)
    write_uvarint(out, len(data) + 1)
    out += data


def write_compact_nullable_string(out, blobs, value):
    if value is None:
        out.append(0)
    else:
        data = _utf8(value)
        write_uvarint(out, len(data) + 1)
        out += data


# ---------------------------------------------------------------- bytes

def read_bytes(mv, pos):
    (n,) = _unpack_i32(mv, pos)
    pos += 4
    end = _check(mv, pos, n, "bytes")
    return bytes(mv[pos:end]), end


def read_nullable_bytes(mv, pos):
    (n,) = _unpack_i32(mv, pos)
    pos += 4
    if n == -1:
        return None, pos
    end = _nullable_check(mv, pos, n, "bytes")
    return bytes(mv[pos:end]), end


def read_compact_bytes(mv, pos):
    n, pos = read_uvarint(mv, pos)
    end = _check(mv, pos, n - 1, "bytes")
    return bytes(mv[pos:end]), end


def read_compact_nullable_bytes(mv, pos):
    n, pos = read_uvarint(mv, pos)
    if n == 0:
        return None, pos
    end = _check(mv, pos, n - 1, "bytes")
    return bytes(mv[pos:end]), end


def _nbytes(value):
    return value.nbytes if value.__class__ is memoryview else len(value)


def write_bytes(out, blobs, value):
    out += _pack_i32(_nbytes(value))
    out += value


def write_nullable_bytes(out, blobs, value):
    if value is None:
        out += _NULL32
    else:
        out += _pack_i32(_nbytes(value))
        out += value


def write_compact_bytes(out, blobs, value):
    write_uvarint(out, _nbytes(value) + 1)
    out += value


def write_compact_nullable_bytes(out, blobs, value):
    if value is None:
        out.append(0)
    else:
        write_uvarint(out, _nbytes(value) + 1)
        out += value


# ---------------------------------------------------------------- records (zero-copy)

def read_records(mv, pos):
    (n,) = _unpack_i32(mv, pos)
    pos += 4
    end = _check(mv, pos, n, "records")
    return mv[pos:end], end


def read_nullable_records(mv, pos):
    (n,) = _unpack_i32(mv, pos)
    pos += 4
    if n == -1:
        return None, pos
    end = pos + n
    if n < 0 or end > len(mv):
        _nullable_check(mv, pos, n, "records")
    return mv[pos:end], end


def read_compact_records(mv, pos):
    n, pos = read_uvarint(mv, pos)
    end = _check(mv, pos, n - 1, "records")
    return mv[pos:end], end


def read_compact_nullable_records(mv, pos):
    n = mv[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(mv, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(mv):
        _check(mv, pos, n - 1, "records")
    return mv[pos:end], end


def write_records(out, blobs, value):
    n = value.nbytes if value.__class__ is memoryview else len(value)
    out += _pack_i32(n)
    if n >= RECORDS_CHUNK_MIN:
        blobs.append((len(out), value))
    else:
        out += value


def write_nullable_records(out, blobs, value):
    if value is None:
        out += _NULL32
        return
    n = value.nbytes if value.__class__ is memoryview else len(value)
    out += _pack_i32(n)
    if n >= RECORDS_CHUNK_MIN:
        blobs.append((len(out), value))
    else:
        out += value


def write_compact_records(out, blobs, value):
    n = value.nbytes if value.__class__ is memoryview else len(value)
    write_uvarint(out, n + 1)
    if n >= RECORDS_CHUNK_MIN:
        blobs.append((len(out), value))
    else:
        out += value


def write_compact_nullable_records(out, blobs, value):
    if value is None:
        out.append(0)
        return
    n = value.nbytes if value.__class__ is memoryview else len(value)
    write_uvarint(out, n + 1)
    if n >= RECORDS_CHUNK_MIN:
        blobs.append((len(out), value))
    else:
        out += value


# ---------------------------------------------------------------- arrays

def _read_elements(mv, pos, n, elem):
    if n == 0:
        return [], pos
    left = len(mv) - pos
    if elem.__class__ is Fixed:
        size = n * elem.size
        if size > left:
            raise WireError(f"array of {n} elements exceeds the {left} bytes left")
        return list(struct.unpack_from(f">{n}{elem.code}", mv, pos)), pos + size
    if n > left:
        raise WireError(f"array of {n} elements exceeds the {left} bytes left")
    items = []
    append = items.append
    for _ in range(n):
        value, pos = elem(mv, pos)
        append(value)
    return items, pos


def read_array(mv, pos, elem):
    (n,) = _unpack_i32(mv, pos)
    if n < 0:
        raise WireError("null array where the field is not nullable")
    return _read_elements(mv, pos + 4, n, elem)


def read_nullable_array(mv, pos, elem):
    (n,) = _unpack_i32(mv, pos)
    if n < 0:
        if n == -1:
            return None, pos + 4
        raise WireError(f"negative array length {n}")
    return _read_elements(mv, pos + 4, n, elem)


def read_compact_array(mv, pos, elem):
    n = mv[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(mv, pos)
    if n == 0:
        raise WireError("null array where the field is not nullable")
    return _read_elements(mv, pos, n - 1, elem)


def read_compact_nullable_array(mv, pos, elem):
    n = mv[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = read_uvarint(mv, pos)
    if n == 0:
        return None, pos
    return _read_elements(mv, pos, n - 1, elem)


def _write_elements(out, blobs, items, elem):
    if elem.__class__ is Fixed:
        out += struct.pack(f">{len(items)}{elem.code}", *items)
    else:
        for item in items:
            elem(out, blobs, item)


def write_array(out, blobs, items, elem):
    out += _pack_i32(len(items))
    _write_elements(out, blobs, items, elem)


def write_nullable_array(out, blobs, items, elem):
    if items is None:
        out += _NULL32
    else:
        out += _pack_i32(len(items))
        _write_elements(out, blobs, items, elem)


def write_compact_array(out, blobs, items, elem):
    n = len(items) + 1
    if n < 0x80:
        out.append(n)
    else:
        write_uvarint(out, n)
    _write_elements(out, blobs, items, elem)


def write_compact_nullable_array(out, blobs, items, elem):
    if items is None:
        out.append(0)
    else:
        n = len(items) + 1
        if n < 0x80:
            out.append(n)
        else:
            write_uvarint(out, n)
        _write_elements(out, blobs, items, elem)


# ---------------------------------------------------------------- nullable structs

def read_nullable_struct(mv, pos, decode):
    marker = mv[pos]
    if marker == 0xFF:
        return None, pos + 1
    if marker != 1:
        raise WireError(f"bad presence byte {marker} for a nullable struct")
    return decode(mv, pos + 1)


def write_nullable_struct(out, blobs, value, encode):
    if value is None:
        out.append(0xFF)
    else:
        out.append(1)
        encode(out, blobs, value)


# ---------------------------------------------------------------- tagged fields

def read_tags(mv, pos, obj, known):
    """Read a tagged-field section into ``obj``.

    ``known`` maps tag -> (attribute, reader) for this struct and version (or is None).
    Unknown tags are kept as ``obj.unknown_tagged_fields = [(tag, bytes), ...]``.
    """
    count, pos = read_uvarint(mv, pos)
    if count > len(mv) - pos:
        raise WireError(f"{count} tagged fields exceed the {len(mv) - pos} bytes left")
    unknown = None
    for _ in range(count):
        tag, pos = read_uvarint(mv, pos)
        size, pos = read_uvarint(mv, pos)
        end = pos + size
        if end > len(mv):
            raise WireError(f"tagged field {tag} of {size} bytes exceeds the {len(mv) - pos} left")
        entry = known.get(tag) if known else None
        if entry is None:
            if unknown is None:
                unknown = []
            unknown.append((tag, bytes(mv[pos:end])))
        else:
            attr, reader = entry
            try:
                value, _ = reader(mv[:end], pos)
            except (IndexError, struct.error) as exc:
                raise WireError(f"tagged field {tag} ({attr}) is truncated") from exc
            setattr(obj, attr, value)
        pos = end
    if unknown is not None:
        obj.unknown_tagged_fields = unknown
    return pos


def write_tags(out, blobs, obj, known):
    """Write the tagged-field section of ``obj``.

    ``known`` is a tuple of (tag, attribute, default, writer): a field is written when its
    value differs from the default. Unknown tagged fields kept from decoding are written too,
    all in ascending tag order.
    """
    fields = []
    for tag, attr, default, writer in known:
        value = getattr(obj, attr)
        if value != default:
            buf = bytearray()
            parts = []
            writer(buf, parts, value)
            for at, blob in reversed(parts):
                buf[at:at] = blob
            fields.append((tag, buf))
    unknown = obj.unknown_tagged_fields
    if unknown:
        fields.extend(unknown)
        fields.sort(key=_first)
    write_uvarint(out, len(fields))
    for tag, data in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data


def _first(item):
    return item[0]
