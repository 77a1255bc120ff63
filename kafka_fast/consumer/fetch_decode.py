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

from ..codecs.compression import DecompressionBudget
from ..errors import CorruptRecordError, DecompressionLimitError
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
    """The result of ``decode_partition``: records as segments, the next fetch offset, the
    leader epoch of the batch before it, and the error that stopped decoding (if any)."""

    __slots__ = ("segments", "next_offset", "count", "last_epoch", "error")

    def __init__(self, segments: list[Segment], next_offset: int, last_epoch: int,
                 error: CorruptRecordError | None = None) -> None:
        self.segments = segments
        self.next_offset = next_offset
        self.count = sum(s.stop - s.start for s in segments)
        self.last_epoch = last_epoch
        self.error = error


def decode_partition(
    records,
    fetch_offset: int,
    *,
    read_committed: bool = True,
    aborted_transactions: Iterable[tuple[int, int]] | None = None,
    verify_crc: bool = False,
    budget: DecompressionBudget | None = None,
) -> DecodedPartition:
    """Decode ``records`` (the Fetch response's bytes for one partition).

    ``aborted_transactions`` holds ``(producer_id, first_offset)`` pairs. Records before
    ``fetch_offset`` (a compressed batch may start earlier) are left out. The next fetch offset
    moves past every complete batch, including skipped control and aborted ones.
    Malformed data stops decoding: the result keeps the batches before it, ``next_offset`` is
    where the bad batch starts and ``error`` the ``CorruptRecordError``.

    Decompression of all batches together is bounded by ``budget`` (a new
    ``DecompressionBudget()``, i.e. ``MAX_DECOMPRESSED_SIZE`` bytes and, for compressed legacy
    messages, ``MAX_DECOMPRESSED_RECORDS`` records, if None). When it runs out after some
    batches were decoded, decoding stops there without an error (the next fetch starts at that
    batch); only a first batch that alone exceeds it is an error.
    """
    next_offset = fetch_offset
    last_epoch = -1
    segments: list[Segment] = []
    if records is None or len(records) == 0:
        return DecodedPartition(segments, next_offset, last_epoch)
    aborted = sorted(aborted_transactions or (), key=lambda a: a[1]) if read_committed else []
    pending = 0
    aborting: set[int] = set()
    if budget is None:
        budget = DecompressionBudget()
    batches, error = _decode_batches(records, verify_crc, budget)
    try:
        for batch in batches:
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
            # Key and value bytes stay in the response until a consumer call copies them
            # once, into its own columns or bytes (``DeferredColumns``).
            cols = batch.columns(defer=True)
            n = len(cols.offsets)
            start = 0
            if n and cols.offsets[0] < fetch_offset:
                start = int(np.searchsorted(cols.offsets, fetch_offset))
            if start < n:
                segments.append(Segment(cols, start, n, batch.timestamp_type, epoch))
            next_offset = max(next_offset, batch_next)
            last_epoch = epoch
    except CorruptRecordError as exc:
        error = exc
    if isinstance(error, DecompressionLimitError) and next_offset > fetch_offset:
        error = None  # out of budget after progress: the rest comes with the next fetch
    return DecodedPartition(segments, next_offset, last_epoch, error)


def _decode_batches(records, verify_crc: bool,
                    budget: DecompressionBudget) -> tuple[list, CorruptRecordError | None]:
    """The batches of ``records``; on malformed data, those before the bad batch and the
    error."""
    used, decoded = budget.used, budget.records
    try:
        return decode_batches(records, verify_crc=verify_crc, budget=budget), None
    except CorruptRecordError as exc:
        error = exc
    # the batches are decoded again below, charged as the first time
    budget.used, budget.records = used, decoded
    good: list = []
    view = memoryview(records).cast("B")
    pos = 0
    while len(view) - pos >= 12:
        end = pos + 12 + int.from_bytes(view[pos + 8:pos + 12], "big", signed=True)
        if end <= pos + 12 or end > len(view):
            break
        try:
            good.extend(decode_batches(view[pos:end], verify_crc=verify_crc,
                                       allow_partial=False, budget=budget))
        except CorruptRecordError:
            break
        pos = end
    return good, error
