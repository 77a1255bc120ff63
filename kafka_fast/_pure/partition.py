"""Key hashing and partition choice: the pure-Python twin of ``kafka_fast._native._partition``.

Hashes follow the clients whose placement we match:

- ``murmur2``: the Java client's ``Utils.murmur2`` (seed 0x9747b28c), made positive with
  ``& 0x7fffffff`` before the modulo, as Java's default partitioner and librdkafka's
  ``murmur2`` partitioner do.
- ``fnv1a``: librdkafka's FNV-1a (32-bit, absolute value of the signed result).
- ``consistent``: CRC-32 (zlib/IEEE) of the key, as librdkafka's ``consistent``.

A partitioner answers ``-1`` (:data:`UNASSIGNED`) for records it leaves to the sticky/random
choice: null keys for the ``*_random`` partitioners, empty keys too for ``consistent_random``,
every record for ``random``.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from kafka_fast.records.buffers import byte_view

UNASSIGNED = -1

#: Partitioner ids, by librdkafka name.
ALGORITHMS = {
    "random": 0,
    "consistent": 1,
    "consistent_random": 2,
    "murmur2": 3,
    "murmur2_random": 4,
    "fnv1a": 5,
    "fnv1a_random": 6,
}
_RANDOM, _CONSISTENT, _CONSISTENT_RANDOM, _MURMUR2, _MURMUR2_RANDOM, _FNV1A, _FNV1A_RANDOM = range(7)

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Java's ``Utils.murmur2``: a signed 32-bit hash."""
    data = bytes(data)
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def fnv1a(data: bytes) -> int:
    """librdkafka's ``rd_fnv1a``: FNV-1a over the bytes, as a non-negative 32-bit value."""
    h = 0x811C9DC5
    for byte in bytes(data):
        h = ((h ^ byte) * 0x01000193) & _MASK
    if h & 0x80000000:
        h = (-h) & _MASK  # absolute value of the int32 (INT32_MIN stays 0x80000000)
    return h


def consistent(data: bytes) -> int:
    """CRC-32 of the bytes (librdkafka's ``consistent`` hash)."""
    return zlib.crc32(bytes(data)) & _MASK


def algorithm_id(name: str) -> int:
    """The id of partitioner ``name``; ``ValueError`` for unknown names."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown partitioner {name!r}; expected one of {', '.join(ALGORITHMS)}"
        ) from None


def partition_key(key: Any, num_partitions: int, algorithm: int) -> int:
    """The partition of one key (bytes-like or None), or :data:`UNASSIGNED`."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    if algorithm == _RANDOM:
        return UNASSIGNED
    if key is None:
        if algorithm in (_MURMUR2_RANDOM, _FNV1A_RANDOM, _CONSISTENT_RANDOM):
            return UNASSIGNED
        key = b""
    else:
        key = memoryview(key).tobytes()  # TypeError for anything but a bytes-like object
        if algorithm == _CONSISTENT_RANDOM and not key:
            return UNASSIGNED
    if algorithm in (_MURMUR2, _MURMUR2_RANDOM):
        return (murmur2(key) & 0x7FFFFFFF) % num_partitions
    if algorithm in (_FNV1A, _FNV1A_RANDOM):
        return fnv1a(key) % num_partitions
    if algorithm in (_CONSISTENT, _CONSISTENT_RANDOM):
        return consistent(key) % num_partitions
    raise ValueError(f"unknown partitioner id {algorithm}")


def _int_out(out: Any, n: int, dtype: Any, what: str) -> np.ndarray:
    """``out`` checked to be a 1-D C-contiguous array of ``dtype`` and length ``n``, or a new
    one when it is None."""
    if out is None:
        return np.empty(n, dtype=dtype)
    if (not isinstance(out, np.ndarray) or out.dtype != dtype or out.ndim != 1
            or not out.flags.c_contiguous or not out.flags.writeable):
        raise TypeError(f"{what} must be a writable 1-D C-contiguous {np.dtype(dtype).name} array")
    if out.shape[0] != n:
        raise ValueError(f"{what} has {out.shape[0]} entries for {n} records")
    return out


def partition_column(keys: Any, num_partitions: int, algorithm: int,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Partitions of a key column (list of bytes-like/None, 2-D uint8 array, or packed
    ``(data, offsets[, nulls])``) as an int32 array, :data:`UNASSIGNED` where the
    sticky/random choice applies: written into ``out`` (a 1-D int32 array of exactly that
    length, reused across calls) when given."""
    if is_packed(keys):
        _packed_parts(keys)  # validates the layout
    n = column_length(keys)
    out = _int_out(out, n, np.int32, "out")
    for i in range(n):
        out[i] = partition_key(column_item(keys, i), num_partitions, algorithm)
    return out


def group_by_partition(parts: np.ndarray, num_partitions: int,
                       out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stable counting sort of record indices by partition.

    Returns ``(order, starts)``: ``order[starts[p]:starts[p + 1]]`` are the indices of the
    records of partition ``p``, in their original order (written into ``out``, a 1-D int64
    array of exactly ``len(parts)`` entries reused across calls, when given). Every entry of
    ``parts`` must be in ``range(num_partitions)``.
    """
    parts = np.asarray(parts)
    n = len(parts)
    counts = [0] * num_partitions
    for i in range(n):
        p = int(parts[i])
        if not 0 <= p < num_partitions:
            raise ValueError(f"record {i} has partition {p}, outside 0..{num_partitions - 1}")
        counts[p] += 1
    starts = np.zeros(num_partitions + 1, dtype=np.int64)
    for p in range(num_partitions):
        starts[p + 1] = starts[p] + counts[p]
    fill = [int(s) for s in starts[:-1]]
    order = _int_out(out, n, np.int64, "out")
    for i in range(n):
        p = int(parts[i])
        order[fill[p]] = i
        fill[p] += 1
    return order, starts


def is_packed(column: Any) -> bool:
    """True for a packed ``(data, offsets)`` or ``(data, offsets, nulls)`` column."""
    return (type(column) is tuple and 2 <= len(column) <= 3
            and isinstance(column[1], np.ndarray))


def _packed_parts(column: tuple) -> tuple[Any, np.ndarray, np.ndarray | None]:
    data = column[0]
    if isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    data = byte_view(data, "packed data")
    offsets = np.ascontiguousarray(column[1], dtype=np.int64)
    n = len(offsets) - 1
    if offsets.ndim != 1 or n < 0:
        raise ValueError("packed offsets must be a 1-D array of N + 1 boundaries")
    nulls = column[2] if len(column) == 3 else None
    if nulls is not None:
        nulls = np.ascontiguousarray(nulls).astype(np.bool_, copy=False)
        if len(nulls) != n:
            raise ValueError(f"packed nulls has {len(nulls)} entries for {n} rows")
    if n and (offsets[0] < 0 or offsets[n] > len(data) or np.any(offsets[1:] < offsets[:n])):
        raise ValueError("packed offsets must be non-decreasing and within the data buffer")
    return data, offsets, nulls


def column_length(column: Any) -> int:
    """Number of rows of a list, 2-D array or packed column."""
    if is_packed(column):
        return len(column[1]) - 1
    return len(column)


def column_item(column: Any, i: int) -> Any:
    """Row ``i`` of a column as bytes-like or None."""
    if is_packed(column):
        if len(column) == 3 and column[2] is not None and column[2][i]:
            return None
        return bytes(byte_view(column[0], "packed data")[column[1][i]:column[1][i + 1]])
    if isinstance(column, np.ndarray):
        return column[i].tobytes()
    return column[i]


def gather_packed(column: tuple, order: np.ndarray, start: int, stop: int) -> tuple:
    """Rows ``order[start:stop]`` of a packed column as a new packed
    ``(bytearray, offsets, nulls or None)``."""
    data, offsets, nulls = _packed_parts(column)
    n = len(offsets) - 1
    if start < 0 or stop > len(order) or start > stop:
        raise IndexError(f"rows {start}:{stop} outside the order of {len(order)}")
    idx = np.asarray(order[start:stop], dtype=np.int64)
    out = bytearray()
    out_offsets = np.zeros(len(idx) + 1, dtype=np.int64)
    for j, i in enumerate(idx):
        if not 0 <= i < n:
            raise IndexError(f"row index {i} outside a column of {n}")
        out += data[offsets[i]:offsets[i + 1]]
        out_offsets[j + 1] = len(out)
    return (out, out_offsets, None if nulls is None else nulls[idx])


def gather_rows(rows: np.ndarray, order: np.ndarray, start: int, stop: int,
                out: np.ndarray | None = None) -> np.ndarray:
    """Rows ``order[start:stop]`` of a C-contiguous 2-D uint8 array, copied into ``out``
    (a ``(stop - start, width)`` uint8 array, reused across calls) or a new array."""
    if start < 0 or stop > len(order) or start > stop:
        raise IndexError(f"rows {start}:{stop} outside the order of {len(order)}")
    idx = np.asarray(order[start:stop], dtype=np.int64)
    if len(idx) and (idx.min() < 0 or idx.max() >= len(rows)):
        raise IndexError(f"row index outside an array of {len(rows)} rows")
    if out is not None and out.shape != (len(idx), rows.shape[1]):
        raise ValueError(f"out has shape {out.shape}, expected {(len(idx), rows.shape[1])}")
    return np.take(rows, idx, axis=0, out=out)


def gather_list(items: list, order: np.ndarray, start: int, stop: int) -> list:
    """Items ``order[start:stop]`` of a list, as a new list."""
    if start < 0 or stop > len(order) or start > stop:
        raise IndexError(f"rows {start}:{stop} outside the order of {len(order)}")
    idx = np.asarray(order[start:stop], dtype=np.int64).tolist()
    for i in idx:
        if not 0 <= i < len(items):
            raise IndexError(f"row index {i} outside a list of {len(items)} rows")
    return [items[i] for i in idx]


def first_not_bytes(items: list, start: int = 0) -> int:
    """Index of the first item at or after ``start`` that is neither None nor exactly
    ``bytes`` (-1 when there is none)."""
    for i in range(max(start, 0), len(items)):
        item = items[i]
        if item is not None and item.__class__ is not bytes:
            return i
    return -1


def row_sizes(column: Any) -> np.ndarray:
    """Byte length of every row of a column (0 for nulls) as int64."""
    if is_packed(column):
        _, offsets, nulls = _packed_parts(column)
        sizes = np.diff(offsets)
        if nulls is not None:
            sizes[nulls] = 0
        return sizes
    if isinstance(column, np.ndarray):
        width = column.shape[1] if column.ndim == 2 else 0
        return np.full(column.shape[0], width, dtype=np.int64)
    return np.asarray([_item_size(item) for item in column], dtype=np.int64)


def _item_size(item: Any) -> int:
    """Bytes of one row: its buffer's size (not ``len()``), characters for a str."""
    if item is None:
        return 0
    if type(item) is bytes or isinstance(item, str):
        return len(item)
    with memoryview(item) as view:
        return view.nbytes


def chunk_ends(sizes: np.ndarray, max_bytes: int, max_count: int) -> np.ndarray:
    """Split rows with the given byte sizes into consecutive chunks of at most ``max_bytes``
    (a single larger row forms its own chunk) and ``max_count`` rows; returns each chunk's
    end index."""
    ends = []
    total = 0
    count = 0
    for i, size in enumerate(sizes):
        size = int(size)
        if count and (total + size > max_bytes or count >= max_count):
            ends.append(i)
            total = 0
            count = 0
        total += size
        count += 1
    if count:
        ends.append(len(sizes))
    return np.asarray(ends, dtype=np.int64)
