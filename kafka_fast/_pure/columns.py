"""Build ``Message`` objects from decoded record columns (pure-Python twin of ``_columns``)."""

from __future__ import annotations

from kafka_fast.message import Message

from .buffers import byte_view


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
