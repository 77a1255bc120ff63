"""Build ``Message`` objects from decoded record columns (pure-Python twin of ``_columns``)."""

from __future__ import annotations

from kafka_fast.message import Message

from .buffers import byte_view
from .partition import column_item, column_length


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
    epoch = leader_epoch if leader_epoch >= 0 else None
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
        out.append(Message(
            topic, partition, offsets[i],
            None if kn[i] else bytes(kd[ko[i]:ko[i + 1]]),
            None if vn[i] else bytes(vd[vo[i]:vo[i + 1]]),
            (headers[i] or None) if headers is not None else None,
            timestamp=(timestamp_type, timestamps[i]), leader_epoch=epoch,
        ))
    return stop - start


def _cell(column, i: int):
    if column is None:
        return None
    if isinstance(column, list):
        item = column[i]
        return item if item is None or type(item) is bytes else bytes(item)
    return column_item(column, i)


def delivery_messages(out: list, topic: str, partition: int, base_offset: int, values, keys,
                      headers, timestamps, timestamp_type: int, fixed_timestamp: int, error,
                      count: int) -> int:
    """Append the delivery-report ``Message`` of each of ``count`` records of a
    ``produce_batch`` batch to ``out``: record ``i`` gets offset ``base_offset + i`` (-1001
    for all when ``base_offset`` < 0), its key, value and headers from the columns, and
    ``timestamps[i]`` (``fixed_timestamp`` for all when it is >= 0). Returns ``count``."""
    for name, column in (("values", values), ("keys", keys), ("headers", headers)):
        if column is not None and column_length(column) < count:
            raise ValueError(f"{name} has {column_length(column)} rows for {count} records")
    if fixed_timestamp < 0 and len(timestamps) < count:
        raise ValueError(f"timestamps has {len(timestamps)} rows for {count} records")
    for i in range(count):
        out.append(Message(
            topic, partition, base_offset + i if base_offset >= 0 else -1001,
            _cell(keys, i), _cell(values, i), None if headers is None else headers[i], error,
            (timestamp_type,
             fixed_timestamp if fixed_timestamp >= 0 else int(timestamps[i]))))
    return count
