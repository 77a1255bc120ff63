"""The records of one ShareFetch partition: the acquired ones as ``ShareMessage``s.

Record batches decode as a normal Fetch's do (``decode_partition``, read_uncommitted: the
broker acquires only what the share group's isolation level lets through). Only offsets in
the AcquiredRecords ranges are delivered, each with its range's delivery count; acquired
offsets without a record (compacted away, or control records) are returned as gaps to be
acknowledged as such; acquired offsets past the last complete batch (cut off by the size
limits) are returned to be released.
"""

from __future__ import annotations

from typing import Any

from .._impl import load
from ..consumer.fetch_decode import decode_partition
from ..message import Message
from .model import ShareMessage

_columns, _ = load("_columns", "columns")


def acquired_messages(topic: str, partition: int, records: Any, acquired: list,
                      verify_crc: bool = False
                      ) -> tuple[list[ShareMessage], list[int], list[int]]:
    """(messages of the acquired records in offset order, acquired offsets without a
    record, acquired offsets not in the data). ``acquired`` holds (first_offset,
    last_offset, delivery_count) triples."""
    if not acquired:
        return [], [], []
    first = min(a[0] for a in acquired)
    decoded = decode_partition(records, first, read_committed=False, verify_crc=verify_crc)
    counts: dict[int, int] = {}
    for lo, hi, times in acquired:
        for offset in range(lo, hi + 1):
            counts[offset] = times
    built: list[Message] = []
    for seg in decoded.segments:
        _columns.append_messages(built, topic, partition, seg.cols, seg.start, seg.stop,
                                 seg.timestamp_type, seg.leader_epoch)
    out = []
    for msg in built:
        off = msg.offset()
        if off is None:
            continue
        count = counts.pop(off, None)
        if count is not None:
            out.append(ShareMessage(msg, topic, partition, off, count))
    if decoded.error is not None and not out:
        raise decoded.error
    end = decoded.next_offset
    return (out, sorted(o for o in counts if o < end), sorted(o for o in counts if o >= end))
