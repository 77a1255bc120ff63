"""Kafka varints: zigzag-encoded base-128 integers (``varint`` = int32, ``varlong`` = int64).

Pure-Python twin of the compiled helpers in ``kafka_fast._native._records``.
Decoders raise ``CorruptRecordError`` on truncation or on a value that overflows its type.
"""

from __future__ import annotations

from kafka_fast.errors import CorruptRecordError

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def zigzag_encode(value: int) -> int:
    """Map a signed int64 to an unsigned one (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError(f"{value} does not fit in int64")
    return ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


def _encode_unsigned(u: int) -> bytes:
    out = bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zigzag varint of a signed int32 (1 to 5 bytes)."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise OverflowError(f"{value} does not fit in a varint (int32)")
    return _encode_unsigned(zigzag_encode(value))


def encode_varlong(value: int) -> bytes:
    """Zigzag varint of a signed int64 (1 to 10 bytes)."""
    return _encode_unsigned(zigzag_encode(value))


def size_of_varint(value: int) -> int:
    """Encoded size in bytes of ``value`` as a zigzag varint/varlong."""
    u = zigzag_encode(value)
    n = 1
    while u > 0x7F:
        u >>= 7
        n += 1
    return n


def _decode(buf, pos: int, end: int | None, max_bytes: int, bits: int, what: str) -> tuple[int, int]:
    u = 0
    shift = 0
    if end is None:
        end = len(buf)
    for i in range(max_bytes):
        if pos + i >= end:
            raise CorruptRecordError(f"truncated {what}", pos)
        b = buf[pos + i]
        u |= (b & 0x7F) << shift
        if not b & 0x80:
            if u >> bits:
                raise CorruptRecordError(f"{what} overflows int{bits}", pos)
            return zigzag_decode(u), pos + i + 1
        shift += 7
    raise CorruptRecordError(f"{what} overflows int{bits} (longer than {max_bytes} bytes)", pos)


def decode_varint(buf, pos: int = 0, end: int | None = None) -> tuple[int, int]:
    """Read a zigzag int32 varint at ``pos`` (not past ``end``); returns ``(value, next_pos)``."""
    return _decode(buf, pos, end, 5, 32, "varint")


def decode_varlong(buf, pos: int = 0, end: int | None = None) -> tuple[int, int]:
    """Read a zigzag int64 varint at ``pos`` (not past ``end``); returns ``(value, next_pos)``."""
    return _decode(buf, pos, end, 10, 64, "varlong")
