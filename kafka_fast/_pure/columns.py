"""Build ``Message`` objects from decoded record columns (pure-Python twin of ``_columns``)."""

from __future__ import annotations

import numpy as np

from kafka_fast.message import build
from kafka_fast.records.buffers import byte_view


def append_messages(out: list, topic: str, partition: int, cols, start: int, stop: int,
                    timestamp_type: int, leader_epoch: int) -> int:
    """Append ``Message`` objects for records ``[start, stop)`` of ``cols`` to ``out``."""
    n = len(cols.offsets)
    if start < 0 or stop > n or start > stop:
        raise ValueError(f"record range [{start}, {stop}) outside a batch of {n}")
    kdata, koffs = cols.keys
    vdata, voffs = cols.values
    kd = byte_view(kdata, "key data")
    vd = byte_view(vdata, "value data")
    ko = koffs.tolist()
    vo = voffs.tolist()
    kn = cols.key_nulls.tolist()
    vn = cols.value_nulls.tolist()
    offsets = cols.offsets.tolist()
    timestamps = cols.timestamps.tolist()
    headers = cols.headers
    if (len(timestamps) != n or len(ko) != n + 1 or len(vo) != n + 1 or len(kn) != n
            or len(vn) != n):
        raise ValueError("record columns have inconsistent lengths")
    if headers is not None and len(headers) != n:
        raise ValueError("record headers column has the wrong length")
    for i in range(start, stop):
        for offs, data in ((ko, kd), (vo, vd)):
            if not 0 <= offs[i] <= offs[i + 1] <= len(data):
                raise ValueError(f"column offsets out of bounds at record {i}")
    for i in range(start, stop):
        out.append(build(
            topic, partition, offsets[i],
            None if kn[i] else bytes(kd[ko[i]:ko[i + 1]]),
            None if vn[i] else bytes(vd[vo[i]:vo[i + 1]]),
            (headers[i] or None) if headers is not None else None,
            timestamp_type, timestamps[i], None, leader_epoch))
    return stop - start


_NO_NULLS: list = []


class _Cells:
    """Row access to one produce_batch column: None, a list, a 2-D uint8 array or a packed
    ``(data, offsets[, nulls])`` column, each bound-checked against ``n`` rows (as the compiled
    ``_Cells``: the same forms accepted, the same errors raised)."""

    def __init__(self, column, n: int, what: str) -> None:
        self.kind = 0
        if column is None:
            return
        if isinstance(column, list):
            self.kind = 1
            self.items = column
            if len(column) < n:
                raise ValueError(f"{what} has {len(column)} rows for {n} records")
        elif isinstance(column, np.ndarray):
            self.kind = 2
            if column.ndim != 2:
                raise ValueError(f"Buffer has wrong number of dimensions (expected 2, got "
                                 f"{column.ndim})")
            if column.dtype != np.uint8:
                raise ValueError(f"Buffer dtype mismatch, expected 'const uint8_t' but got "
                                 f"{column.dtype}")
            if not column.flags.c_contiguous:
                raise ValueError("ndarray is not C-contiguous")
            self.rows = column
            if column.shape[0] < n:
                raise ValueError(f"{what} has {column.shape[0]} rows for {n} records")
        elif isinstance(column, tuple) and len(column) in (2, 3):
            self.kind = 3
            self.data = byte_view(column[0], f"{what} data")
            self.offs = np.ascontiguousarray(column[1], dtype=np.int64).tolist()
            if len(self.offs) < n + 1:
                raise ValueError(f"{what} has {len(self.offs) - 1} rows for {n} records")
            self.nulls = _NO_NULLS
            if len(column) == 3 and column[2] is not None:
                self.nulls = np.ascontiguousarray(column[2]).astype(np.bool_).reshape(-1).tolist()
                if len(self.nulls) < n:
                    raise ValueError(f"{what} nulls has {len(self.nulls)} rows for {n} records")
        else:
            raise TypeError(f"{what} is not a list, 2-D uint8 array or packed column")

    def cell(self, i: int):
        if self.kind == 0:
            return None
        if self.kind == 1:
            item = self.items[i]
            return item if item is None or type(item) is bytes else bytes(item)
        if self.kind == 2:
            return self.rows[i].tobytes()
        if self.nulls and self.nulls[i]:
            return None
        lo, hi = self.offs[i], self.offs[i + 1]
        if lo < 0 or hi < lo or hi > len(self.data):
            raise ValueError(f"column offsets out of bounds at record {i}")
        return bytes(self.data[lo:hi])


def delivery_messages(out: list, topic: str, partition: int, base_offset: int, values, keys,
                      headers, timestamps, timestamp_type: int, fixed_timestamp: int, error,
                      count: int) -> int:
    """Append the delivery-report ``Message`` of each of ``count`` records of a
    ``produce_batch`` batch to ``out``: record ``i`` gets offset ``base_offset + i`` (-1001
    for all when ``base_offset`` < 0), its key, value and headers from the columns, and
    ``timestamps[i]`` (``fixed_timestamp`` for all when it is >= 0). Returns ``count``."""
    vals = _Cells(values, count, "values")
    ks = _Cells(keys, count, "keys")
    ts = np.ascontiguousarray(timestamps, dtype=np.int64)
    if ts.ndim != 1:
        raise ValueError(f"Buffer has wrong number of dimensions (expected 1, got {ts.ndim})")
    ts = ts.tolist()
    if fixed_timestamp < 0 and len(ts) < count:
        raise ValueError(f"timestamps has {len(ts)} rows for {count} records")
    if headers is not None and len(headers) < count:
        raise ValueError(f"headers has {len(headers)} rows for {count} records")
    for i in range(count):
        out.append(build(
            topic, partition, base_offset + i if base_offset >= 0 else -1001,
            ks.cell(i), vals.cell(i), None if headers is None else headers[i], timestamp_type,
            fixed_timestamp if fixed_timestamp >= 0 else ts[i], error, -1))
    return count


def entry_messages(out: list, items: list, topic: str, partition: int, base_offset: int,
                   timestamp_type: int, fixed_timestamp: int, error) -> int:
    """Append the delivery-report ``Message`` of each record of a ``produce()`` batch to
    ``out``: ``items`` holds five entries per record (``callback, key, value, headers,
    timestamp_ms``, as ``RecordEntries``); a record without a callback gets None. Record
    ``i`` gets offset ``base_offset + i`` (-1001 for all when ``base_offset`` < 0) and its own
    timestamp (``fixed_timestamp`` for all when it is >= 0). Returns the number of records."""
    n = len(items) // 5
    if len(items) != n * 5:
        raise ValueError(f"record entries hold {len(items)} items, not five per record")
    for i in range(n):
        cb, key, value, headers, ts = items[5 * i:5 * i + 5]
        if cb is None:
            out.append(None)
            continue
        out.append(build(topic, partition, base_offset + i if base_offset >= 0 else -1001,
                         key, value, headers, timestamp_type,
                         fixed_timestamp if fixed_timestamp >= 0 else ts, error, -1))
    return n
