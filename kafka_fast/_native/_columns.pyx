# cython: language_level=3
"""Build ``Message`` objects from decoded record columns, compiled (twin: ``kafka_fast._pure.columns``).

``append_messages`` turns a run of one batch's columns into ``Message`` objects in one C loop:
each ``Message`` (``_message.pyx``) is made without ``__init__`` and its fields written directly,
positions as C values, so a message costs its allocation plus the key and value ``bytes``.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t

from kafka_fast._native._message cimport Message, new_message

import numpy as np

from kafka_fast.records.buffers import byte_view


cdef inline object _field(const uint8_t[::1] data, const int64_t[::1] offs,
                          const uint8_t[::1] nulls, bint has_nulls, Py_ssize_t i):
    if has_nulls and nulls[i]:
        return None
    cdef int64_t lo = offs[i]
    cdef int64_t hi = offs[i + 1]
    if lo < 0 or hi < lo or hi > data.shape[0]:
        raise ValueError(f"column offsets out of bounds at record {i}")
    return PyBytes_FromStringAndSize(<const char *>&data[0] + lo if data.shape[0] else NULL,
                                     hi - lo)


cdef inline const uint8_t[::1] _bytes_view(obj):
    return np.asarray(obj).view(np.uint8).reshape(-1)


def append_messages(list out, str topic, int partition, cols, Py_ssize_t start,
                    Py_ssize_t stop, int timestamp_type, int leader_epoch):
    """Append ``Message`` objects for records ``[start, stop)`` of ``cols`` to ``out``.

    ``cols`` is a ``kafka_fast.records.Columns``. Returns the number appended.
    """
    cdef const int64_t[::1] offsets = cols.offsets
    cdef const int64_t[::1] timestamps = cols.timestamps
    kdata, koffs_obj = cols.keys
    vdata, voffs_obj = cols.values
    cdef const uint8_t[::1] kd = _bytes_view(kdata)
    cdef const int64_t[::1] ko = koffs_obj
    cdef const uint8_t[::1] vd = _bytes_view(vdata)
    cdef const int64_t[::1] vo = voffs_obj
    cdef const uint8_t[::1] kn = _bytes_view(cols.key_nulls)
    cdef const uint8_t[::1] vn = _bytes_view(cols.value_nulls)
    cdef Py_ssize_t n = offsets.shape[0]
    if start < 0 or stop > n or start > stop:
        raise ValueError(f"record range [{start}, {stop}) outside a batch of {n}")
    if (timestamps.shape[0] != n or ko.shape[0] != n + 1 or vo.shape[0] != n + 1
            or kn.shape[0] != n or vn.shape[0] != n):
        raise ValueError("record columns have inconsistent lengths")
    headers = cols.headers
    cdef bint has_headers = headers is not None
    if has_headers and len(headers) != n:
        raise ValueError("record headers column has the wrong length")
    cdef Py_ssize_t i
    cdef Message msg
    cdef object hdrs = None
    for i in range(start, stop):  # every slice checked first: all records or none
        if not (0 <= ko[i] <= ko[i + 1] <= kd.shape[0] and 0 <= vo[i] <= vo[i + 1] <= vd.shape[0]):
            raise ValueError(f"column offsets out of bounds at record {i}")
    for i in range(start, stop):
        if has_headers:
            hdrs = headers[i] or None
        msg = new_message(topic, partition, offsets[i], _field(kd, ko, kn, True, i),
                          _field(vd, vo, vn, True, i), hdrs, timestamp_type, timestamps[i], None,
                          leader_epoch)
        out.append(msg)
    return stop - start


_NO_NULLS = np.zeros(0, dtype=np.uint8)


cdef class _Cells:
    """Row access to one produce_batch column: None, a list, a 2-D uint8 array or a packed
    ``(data, offsets[, nulls])`` column, each bound-checked against ``n`` rows."""
    cdef int kind
    cdef list items
    cdef const uint8_t[:, ::1] rows
    cdef const uint8_t[::1] data
    cdef const int64_t[::1] offs
    cdef const uint8_t[::1] nulls
    cdef bint has_nulls

    def __init__(self, column, Py_ssize_t n, str what):
        self.has_nulls = False
        if column is None:
            self.kind = 0
        elif isinstance(column, list):
            self.kind = 1
            self.items = column
            if len(column) < n:
                raise ValueError(f"{what} has {len(column)} rows for {n} records")
        elif isinstance(column, np.ndarray):
            self.kind = 2
            self.rows = column
            if self.rows.shape[0] < n:
                raise ValueError(f"{what} has {self.rows.shape[0]} rows for {n} records")
        elif isinstance(column, tuple) and len(column) in (2, 3):
            self.kind = 3
            self.data = byte_view(column[0], f"{what} data")
            self.offs = np.ascontiguousarray(column[1], dtype=np.int64)
            if self.offs.shape[0] < n + 1:
                raise ValueError(f"{what} has {self.offs.shape[0] - 1} rows for {n} records")
            self.nulls = _NO_NULLS
            if len(column) == 3 and column[2] is not None:
                self.nulls = _bytes_view(np.ascontiguousarray(column[2]).astype(np.bool_))
                self.has_nulls = True
                if self.nulls.shape[0] < n:
                    raise ValueError(f"{what} nulls has {self.nulls.shape[0]} rows for {n} "
                                     "records")
        else:
            raise TypeError(f"{what} is not a list, 2-D uint8 array or packed column")

    cdef object cell(self, Py_ssize_t i):
        cdef object item
        if self.kind == 0:
            return None
        if self.kind == 1:
            item = self.items[i]
            if item is None or type(item) is bytes:
                return item
            return bytes(item)
        if self.kind == 2:
            return PyBytes_FromStringAndSize(
                <const char *>&self.rows[i, 0] if self.rows.shape[1] else NULL,
                self.rows.shape[1])
        return _field(self.data, self.offs, self.nulls, self.has_nulls, i)


def delivery_messages(list out, str topic, int partition, int64_t base_offset, values, keys,
                      headers, timestamps, int timestamp_type, int64_t fixed_timestamp,
                      error, Py_ssize_t count):
    """Append the delivery-report ``Message`` of each of ``count`` records of a
    ``produce_batch`` batch to ``out``: record ``i`` gets offset ``base_offset + i`` (-1001
    for all when ``base_offset`` < 0), its key, value and headers from the columns, and
    ``timestamps[i]`` (``fixed_timestamp`` for all when it is >= 0). Returns ``count``."""
    cdef _Cells vals = _Cells(values, count, "values")
    cdef _Cells ks = _Cells(keys, count, "keys")
    cdef const int64_t[::1] ts = np.ascontiguousarray(timestamps, dtype=np.int64)
    if fixed_timestamp < 0 and ts.shape[0] < count:
        raise ValueError(f"timestamps has {ts.shape[0]} rows for {count} records")
    cdef bint has_headers = headers is not None
    if has_headers and len(headers) < count:
        raise ValueError(f"headers has {len(headers)} rows for {count} records")
    cdef Py_ssize_t i
    cdef Message msg
    for i in range(count):
        msg = new_message(topic, partition, base_offset + i if base_offset >= 0 else -1001,
                          ks.cell(i), vals.cell(i), headers[i] if has_headers else None,
                          timestamp_type, fixed_timestamp if fixed_timestamp >= 0 else ts[i], error,
                          -1)
        out.append(msg)
    return count


def entry_messages(list out, list items, str topic, int partition, int64_t base_offset,
                   int timestamp_type, int64_t fixed_timestamp, error):
    """Append the delivery-report ``Message`` of each record of a ``produce()`` batch to
    ``out``: ``items`` holds five entries per record (``callback, key, value, headers,
    timestamp_ms``, as ``RecordEntries``); a record without a callback gets None. Record
    ``i`` gets offset ``base_offset + i`` (-1001 for all when ``base_offset`` < 0) and its own
    timestamp (``fixed_timestamp`` for all when it is >= 0). Returns the number of records."""
    cdef Py_ssize_t n = len(items) // 5
    if len(items) != n * 5:
        raise ValueError(f"record entries hold {len(items)} items, not five per record")
    cdef Py_ssize_t i
    cdef Message msg
    cdef object hdrs
    for i in range(n):
        if items[5 * i] is None:
            out.append(None)
            continue
        hdrs = items[5 * i + 3]
        msg = new_message(topic, partition, base_offset + i if base_offset >= 0 else -1001,
                          items[5 * i + 1], items[5 * i + 2], hdrs, timestamp_type,
                          fixed_timestamp if fixed_timestamp >= 0 else items[5 * i + 4], error, -1)
        out.append(msg)
    return n
