"""Turn one partition's fetched record data into the records a consumer may return.

``decode_partition`` is the whole fetch-side record pipeline: batch decoding (CRC check,
decompression, column extraction in the record engine), skipping what lies before the fetch
position, and ``read_committed`` filtering of aborted transactions and control batches with the
Fetch response's aborted-transactions list (the algorithm of KIP-98: a transactional batch is
dropped while its producer has an aborted transaction that began at or before the batch and
whose ABORT marker has not been passed yet).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..records import CONTROL_ABORT, decode_batches, decode_control_key


class Segment:
    """A run ``[start, stop)`` of one batch's records (columns shared, never copied)."""

    __slots__ = ("cols", "start", "stop", "timestamp_type", "leader_epoch")

    def __init__(self, cols, start: int, stop: int, timestamp_type: int,
                 leader_epoch: int) -> None:
        self.cols = cols
        self.start = start
        self.stop = stop
        self.timestamp_type = timestamp_type
        self.leader_epoch = leader_epoch

    def __len__(self) -> int:
        return self.stop - self.start


class DecodedPartition:
    """The result of ``decode_partition``: records as segments and the next fetch offset."""

    __slots__ = ("segments", "next_offset", "count", "last_epoch")

    def __init__(self, segments: list[Segment], next_offset: int, last_epoch: int) -> None:
        self.segments = segments
        self.next_offset = next_offset
        self.count = sum(s.stop - s.start for s in segments)
        self.last_epoch = last_epoch


def decode_partition(
    records,
    fetch_offset: int,
    *,
    read_committed: bool = True,
    aborted_transactions: Iterable[tuple[int, int]] | None = None,
    verify_crc: bool = False,
) -> DecodedPartition:
    """Decode ``records`` (the Fetch response's bytes for one partition).

    ``aborted_transactions`` holds ``(producer_id, first_offset)`` pairs. Records before
    ``fetch_offset`` (a compressed batch may start earlier) are left out. The next fetch offset
    moves past every complete batch, including skipped control and aborted ones.
    Raises ``CorruptRecordError`` on malformed data.
    """
    next_offset = fetch_offset
    last_epoch = -1
    segments: list[Segment] = []
    if records is None or len(records) == 0:
        return DecodedPartition(segments, next_offset, last_epoch)
    aborted = sorted(aborted_transactions or (), key=lambda a: a[1]) if read_committed else []
    pending = 0
    aborting: set[int] = set()
    for batch in decode_batches(records, verify_crc=verify_crc):
        batch_next = batch.next_offset
        if batch_next <= fetch_offset:
            continue
        epoch = getattr(batch, "partition_leader_epoch", -1)
        if read_committed:
            last = batch_next - 1
            while pending < len(aborted) and aborted[pending][1] <= last:
                aborting.add(aborted[pending][0])
                pending += 1
        if getattr(batch, "is_control", False):
            if read_committed and batch.producer_id in aborting:
                recs = batch.records()
                if recs and decode_control_key(recs[0].key)[1] == CONTROL_ABORT:
                    aborting.discard(batch.producer_id)
            next_offset = max(next_offset, batch_next)
            last_epoch = epoch
            continue
        if (read_committed and getattr(batch, "is_transactional", False)
                and batch.producer_id in aborting):
            next_offset = max(next_offset, batch_next)
            last_epoch = epoch
            continue
        cols = batch.columns()
        n = len(cols.offsets)
        start = 0
        if n and cols.offsets[0] < fetch_offset:
            start = int(np.searchsorted(cols.offsets, fetch_offset))
        if start < n:
            segments.append(Segment(cols, start, n, batch.timestamp_type, epoch))
        next_offset = max(next_offset, batch_next)
        last_epoch = epoch
    return DecodedPartition(segments, next_offset, last_epoch)
