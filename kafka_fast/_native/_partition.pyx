# cython: language_level=3
"""Key hashing and partition choice, compiled (twin: ``kafka_fast._pure.partition``).

Hashes: ``murmur2`` is the Java client's ``Utils.murmur2`` (seed 0x9747b28c; partitions use
``& 0x7fffffff`` before the modulo), ``fnv1a`` is librdkafka's (absolute value of the signed
32-bit FNV-1a), ``consistent`` is CRC-32 (zlib/IEEE) as librdkafka's ``consistent``.
A partitioner answers -1 (``UNASSIGNED``) for records left to the sticky/random choice.

The column functions partition, group and gather whole columns for ``produce_batch`` in one
call each, with no Python object per row for arrays and packed columns.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_CheckExact
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.object cimport PyObject
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from libc.string cimport memcpy

import numpy as np

from kafka_fast.records.buffers import byte_view

cimport numpy as cnp

cnp.import_array()

UNASSIGNED = -1

ALGORITHMS = {
    "random": 0,
    "consistent": 1,
    "consistent_random": 2,
    "murmur2": 3,
    "murmur2_random": 4,
    "fnv1a": 5,
    "fnv1a_random": 6,
}

cdef enum:
    A_RANDOM = 0
    A_CONSISTENT = 1
    A_CONSISTENT_RANDOM = 2
    A_MURMUR2 = 3
    A_MURMUR2_RANDOM = 4
    A_FNV1A = 5
    A_FNV1A_RANDOM = 6

cdef uint32_t CRC_TABLE[256]


cdef void _init_crc_table():
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = <uint32_t>n
        for k in range(8):
            if c & 1:
                c = 0xEDB88320U ^ (c >> 1)
            else:
                c = c >> 1
        CRC_TABLE[n] = c


_init_crc_table()


cdef inline uint32_t _murmur2(const uint8_t *data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t m = 0x5BD1E995U
    cdef uint32_t h = 0x9747B28CU ^ <uint32_t>length
    cdef uint32_t k
    cdef Py_ssize_t i, whole = length & ~(<Py_ssize_t>3)
    i = 0
    while i < whole:
        k = (<uint32_t>data[i]) | (<uint32_t>data[i + 1] << 8) | \
            (<uint32_t>data[i + 2] << 16) | (<uint32_t>data[i + 3] << 24)
        k *= m
        k ^= k >> 24
        k *= m
        h *= m
        h ^= k
        i += 4
    cdef Py_ssize_t rest = length & 3
    if rest == 3:
        h ^= <uint32_t>data[whole + 2] << 16
    if rest >= 2:
        h ^= <uint32_t>data[whole + 1] << 8
    if rest >= 1:
        h ^= <uint32_t>data[whole]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return h


cdef inline uint32_t _fnv1a(const uint8_t *data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t h = 0x811C9DC5U
    cdef Py_ssize_t i
    for i in range(length):
        h ^= data[i]
        h *= 0x01000193U
    if h & 0x80000000U:
        h = (~h) + 1
    return h


cdef inline uint32_t _crc32(const uint8_t *data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t c = 0xFFFFFFFFU
    cdef Py_ssize_t i
    for i in range(length):
        c = CRC_TABLE[(c ^ data[i]) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFU


cdef inline int32_t _choose(const uint8_t *data, Py_ssize_t length, bint null,
                            int32_t n, int algorithm) noexcept nogil:
    """Partition for one key; -1 = unassigned, -2 = unknown algorithm."""
    if algorithm == A_RANDOM:
        return -1
    if null:
        if algorithm == A_MURMUR2_RANDOM or algorithm == A_FNV1A_RANDOM \
                or algorithm == A_CONSISTENT_RANDOM:
            return -1
        length = 0
    elif algorithm == A_CONSISTENT_RANDOM and length == 0:
        return -1
    if algorithm == A_MURMUR2 or algorithm == A_MURMUR2_RANDOM:
        return <int32_t>((_murmur2(data, length) & 0x7FFFFFFFU) % <uint32_t>n)
    if algorithm == A_FNV1A or algorithm == A_FNV1A_RANDOM:
        return <int32_t>(_fnv1a(data, length) % <uint32_t>n)
    if algorithm == A_CONSISTENT or algorithm == A_CONSISTENT_RANDOM:
        return <int32_t>(_crc32(data, length) % <uint32_t>n)
    return -2


cdef int32_t choose_partition(const uint8_t *data, Py_ssize_t length, bint null,
                              int32_t n, int algorithm) noexcept nogil:
    """``_choose`` for other compiled modules (declared in ``_partition.pxd``)."""
    return _choose(data, length, null, n, algorithm)


cdef class _Bytes:
    """A borrowed view of a bytes-like object's memory."""
    cdef Py_buffer view
    cdef bint held

    def __cinit__(self, obj):
        PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE)
        self.held = True

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


cdef inline uint32_t _hash_with(object data, int which) except? 0xFFFFFFFFU:
    cdef _Bytes b
    cdef const uint8_t *p
    cdef Py_ssize_t n
    if type(data) is bytes:
        p = <const uint8_t *>PyBytes_AS_STRING(data)
        n = PyBytes_GET_SIZE(data)
        if which == 0:
            return _murmur2(p, n)
        if which == 1:
            return _fnv1a(p, n)
        return _crc32(p, n)
    b = _Bytes(data)
    p = <const uint8_t *>b.view.buf
    n = b.view.len
    if which == 0:
        return _murmur2(p, n)
    if which == 1:
        return _fnv1a(p, n)
    return _crc32(p, n)


def murmur2(data):
    """Java's ``Utils.murmur2``: a signed 32-bit hash."""
    cdef uint32_t h = _hash_with(data, 0)
    return <int32_t>h


def fnv1a(data):
    """librdkafka's ``rd_fnv1a``: FNV-1a over the bytes, as a non-negative 32-bit value."""
    return _hash_with(data, 1)


def consistent(data):
    """CRC-32 of the bytes (librdkafka's ``consistent`` hash)."""
    return _hash_with(data, 2)


def algorithm_id(str name):
    """The id of partitioner ``name``; ``ValueError`` for unknown names."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(
            f"unknown partitioner {name!r}; expected one of {', '.join(ALGORITHMS)}"
        ) from None


cpdef int partition_key(object key, int num_partitions, int algorithm) except -3:
    """The partition of one key (bytes-like or None), or -1 (``UNASSIGNED``)."""
    cdef int32_t r
    cdef _Bytes b
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    if key is None:
        r = _choose(NULL, 0, True, num_partitions, algorithm)
    elif type(key) is bytes:
        r = _choose(<const uint8_t *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), False,
                    num_partitions, algorithm)
    else:
        b = _Bytes(key)
        r = _choose(<const uint8_t *>b.view.buf, b.view.len, False, num_partitions, algorithm)
    if r == -2:
        raise ValueError(f"unknown partitioner id {algorithm}")
    return r


def is_packed(column):
    """True for a packed ``(data, offsets)`` or ``(data, offsets, nulls)`` column."""
    return (type(column) is tuple and 2 <= len(column) <= 3
            and isinstance(column[1], np.ndarray))


def _packed_parts(column):
    """(data uint8 view, offsets int64[N+1], nulls uint8[N] or None), checked."""
    data = byte_view(column[0], "packed data") if not isinstance(column[0], np.ndarray) \
        else np.ascontiguousarray(column[0]).view(np.uint8).reshape(-1)
    offsets = np.ascontiguousarray(column[1], dtype=np.int64)
    n = len(offsets) - 1
    if offsets.ndim != 1 or n < 0:
        raise ValueError("packed offsets must be a 1-D array of N + 1 boundaries")
    nulls = column[2] if len(column) == 3 else None
    if nulls is not None:
        nulls = np.ascontiguousarray(nulls).astype(np.bool_, copy=False).view(np.uint8)
        if len(nulls) != n:
            raise ValueError(f"packed nulls has {len(nulls)} entries for {n} rows")
    if n and (offsets[0] < 0 or offsets[n] > len(data) or np.any(offsets[1:] < offsets[:n])):
        raise ValueError("packed offsets must be non-decreasing and within the data buffer")
    return data, offsets, nulls


def column_length(column):
    """Number of rows of a list, 2-D array or packed column."""
    if is_packed(column):
        return len(column[1]) - 1
    return len(column)


def column_item(column, Py_ssize_t i):
    """Row ``i`` of a column as bytes-like or None."""
    if is_packed(column):
        if len(column) == 3 and column[2] is not None and column[2][i]:
            return None
        return bytes(byte_view(column[0], "packed data")[column[1][i]:column[1][i + 1]])
    if isinstance(column, np.ndarray):
        return column[i].tobytes()
    return column[i]


def partition_column(keys, int num_partitions, int algorithm, out=None):
    """Partitions of a key column (list of bytes-like/None, 2-D uint8 array, or packed
    ``(data, offsets[, nulls])``) as an int32 array, -1 where the sticky/random choice
    applies: written into ``out`` (a 1-D int32 array of exactly that length, reused across
    calls) when given."""
    cdef Py_ssize_t n, i, width
    cdef int32_t r
    cdef const uint8_t[:, ::1] rows
    cdef const uint8_t[::1] data
    cdef const int64_t[::1] offsets
    cdef const uint8_t[::1] nulls
    cdef bint has_nulls
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    if algorithm < 0 or algorithm > 6:
        raise ValueError(f"unknown partitioner id {algorithm}")
    n = column_length(keys)
    out = _int_out(out, n, np.int32, "out")
    cdef int32_t[::1] res = out
    if is_packed(keys):
        data_obj, offsets_obj, nulls_obj = _packed_parts(keys)
        data = data_obj
        offsets = offsets_obj
        has_nulls = nulls_obj is not None
        if has_nulls:
            nulls = nulls_obj
        with nogil:
            for i in range(n):
                res[i] = _choose(&data[0] + offsets[i] if offsets[i + 1] > offsets[i] else NULL,
                                 offsets[i + 1] - offsets[i],
                                 has_nulls and nulls[i] != 0, num_partitions, algorithm)
        return out
    if isinstance(keys, np.ndarray):
        if keys.ndim != 2 or keys.dtype != np.uint8:
            raise TypeError("a key array must be 2-D uint8 (one key per row)")
        rows = np.ascontiguousarray(keys)
        width = rows.shape[1]
        with nogil:
            for i in range(n):
                res[i] = _choose(&rows[i, 0] if width else NULL, width, False,
                                 num_partitions, algorithm)
        return out
    for i in range(n):
        res[i] = partition_key(keys[i], num_partitions, algorithm)
    return out


cdef object _int_out(object out, Py_ssize_t n, object dtype, str what):
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


def group_by_partition(parts, int num_partitions, out=None):
    """Stable counting sort of record indices by partition.

    Returns ``(order, starts)``: ``order[starts[p]:starts[p + 1]]`` are the indices of the
    records of partition ``p`` in their original order (written into ``out``, a 1-D int64
    array of exactly ``len(parts)`` entries reused across calls, when given). Every entry of
    ``parts`` must be in ``range(num_partitions)``.
    """
    cdef const int32_t[::1] ps = np.ascontiguousarray(parts, dtype=np.int32)
    cdef Py_ssize_t n = ps.shape[0], i
    cdef int32_t p
    starts_arr = np.zeros(num_partitions + 1, dtype=np.int64)
    order_arr = _int_out(out, n, np.int64, "out")
    cdef int64_t[::1] starts = starts_arr
    cdef int64_t[::1] order = order_arr
    cdef int64_t[::1] fill
    cdef Py_ssize_t bad = -1
    with nogil:
        for i in range(n):
            p = ps[i]
            if p < 0 or p >= num_partitions:
                bad = i
                break
            starts[p + 1] += 1
    if bad >= 0:
        raise ValueError(
            f"record {bad} has partition {ps[bad]}, outside 0..{num_partitions - 1}")
    for i in range(num_partitions):
        starts[i + 1] += starts[i]
    fill_arr = starts_arr[:num_partitions].copy()
    fill = fill_arr
    with nogil:
        for i in range(n):
            p = ps[i]
            order[fill[p]] = i
            fill[p] += 1
    return order_arr, starts_arr


cdef Py_ssize_t _checked_rows(const int64_t[::1] idx, Py_ssize_t start, Py_ssize_t stop,
                              Py_ssize_t n, str within) except -1:
    """``stop - start`` after checking that ``idx[start:stop]`` lies in the order and every
    row index in it is below ``n`` (``within`` names the source in the error)."""
    cdef Py_ssize_t j
    cdef int64_t i
    if start < 0 or stop > idx.shape[0] or start > stop:
        raise IndexError(f"rows {start}:{stop} outside the order of {idx.shape[0]}")
    for j in range(start, stop):
        i = idx[j]
        if i < 0 or i >= n:
            raise IndexError(f"row index {i} outside {within} {n} rows")
    return stop - start


def gather_packed(column, order, Py_ssize_t start, Py_ssize_t stop):
    """Rows ``order[start:stop]`` of a packed column as a new packed
    ``(bytearray, offsets, nulls or None)``."""
    data_obj, offsets_obj, nulls_obj = _packed_parts(column)
    cdef const uint8_t[::1] data = data_obj
    cdef const int64_t[::1] offsets = offsets_obj
    cdef const int64_t[::1] idx = np.ascontiguousarray(order, dtype=np.int64)
    cdef Py_ssize_t n = offsets.shape[0] - 1, m, j, i
    cdef int64_t total = 0, lo, hi
    m = _checked_rows(idx, start, stop, n, "a column of")
    for j in range(start, stop):
        i = idx[j]
        total += offsets[i + 1] - offsets[i]
    out_data = bytearray(total)
    out_offsets_arr = np.empty(m + 1, dtype=np.int64)
    cdef int64_t[::1] out_offsets = out_offsets_arr
    cdef unsigned char *dst = out_data
    cdef int64_t pos = 0
    out_offsets[0] = 0
    with nogil:
        for j in range(m):
            i = idx[start + j]
            lo = offsets[i]
            hi = offsets[i + 1]
            if hi > lo:
                memcpy(dst + pos, &data[0] + lo, hi - lo)
            pos += hi - lo
            out_offsets[j + 1] = pos
    nulls = None
    if nulls_obj is not None:
        nulls = nulls_obj.view(np.bool_)[np.asarray(order)[start:stop]]
    return (out_data, out_offsets_arr, nulls)


def gather_rows(rows, order, Py_ssize_t start, Py_ssize_t stop, out=None):
    """Rows ``order[start:stop]`` of a C-contiguous 2-D uint8 array, copied into ``out``
    (a ``(stop - start, width)`` uint8 array, reused across calls) or a new array."""
    cdef const uint8_t[:, ::1] src = rows
    cdef const int64_t[::1] idx = np.ascontiguousarray(order, dtype=np.int64)
    cdef Py_ssize_t n = src.shape[0], width = src.shape[1], m, j, i
    m = _checked_rows(idx, start, stop, n, "an array of")
    if out is None:
        out = np.empty((m, width), dtype=np.uint8)
    cdef uint8_t[:, ::1] dst = out
    if dst.shape[0] != m or dst.shape[1] != width:
        raise ValueError(f"out has shape ({dst.shape[0]}, {dst.shape[1]}), "
                         f"expected ({m}, {width})")
    if width:
        with nogil:
            for j in range(m):
                memcpy(&dst[j, 0], &src[idx[start + j], 0], width)
    return out


def gather_list(list items, order, Py_ssize_t start, Py_ssize_t stop):
    """Items ``order[start:stop]`` of a list, as a new list."""
    cdef const int64_t[::1] idx = np.ascontiguousarray(order, dtype=np.int64)
    cdef Py_ssize_t n = len(items), m, j
    m = _checked_rows(idx, start, stop, n, "a list of")
    cdef list out = PyList_New(m)
    cdef PyObject *item
    for j in range(m):
        item = PyList_GET_ITEM(items, idx[start + j])
        Py_INCREF(<object>item)
        PyList_SET_ITEM(out, j, <object>item)
    return out


def first_not_bytes(list items, Py_ssize_t start=0):
    """Index of the first item at or after ``start`` that is neither None nor exactly
    ``bytes`` (-1 when there is none)."""
    cdef Py_ssize_t i, n = len(items)
    cdef PyObject *item
    for i in range(max(start, 0), n):
        item = PyList_GET_ITEM(items, i)
        if item != <PyObject *>None and not PyBytes_CheckExact(<object>item):
            return i
    return -1


def row_sizes(column):
    """Byte length of every row of a column (0 for nulls) as int64."""
    cdef Py_ssize_t n, i
    if is_packed(column):
        data, offsets, nulls = _packed_parts(column)
        sizes = np.diff(offsets)
        if nulls is not None:
            sizes[nulls.view(np.bool_)] = 0
        return sizes
    if isinstance(column, np.ndarray):
        return np.full(column.shape[0], column.shape[1] if column.ndim == 2 else 0,
                       dtype=np.int64)
    n = len(column)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    cdef Py_buffer view
    for i in range(n):
        item = column[i]
        if item is None:
            o[i] = 0
        elif type(item) is bytes:
            o[i] = PyBytes_GET_SIZE(item)
        elif isinstance(item, str):
            o[i] = len(item)
        else:  # the buffer's size, whatever len() says
            PyObject_GetBuffer(item, &view, PyBUF_SIMPLE)
            o[i] = view.len
            PyBuffer_Release(&view)
    return out


def chunk_ends(sizes, int64_t max_bytes, Py_ssize_t max_count):
    """Split rows with the given byte sizes into consecutive chunks of at most ``max_bytes``
    (a single larger row forms its own chunk) and ``max_count`` rows; returns each chunk's
    end index."""
    cdef const int64_t[::1] s = np.ascontiguousarray(sizes, dtype=np.int64)
    cdef Py_ssize_t n = s.shape[0], i, count = 0, k = 0
    cdef int64_t total = 0
    ends_arr = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] ends = ends_arr
    with nogil:
        for i in range(n):
            if count and (total + s[i] > max_bytes or count >= max_count):
                ends[k] = i
                k += 1
                total = 0
                count = 0
            total += s[i]
            count += 1
        if count:
            ends[k] = n
            k += 1
    return ends_arr[:k].copy()
