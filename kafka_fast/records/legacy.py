"""The legacy message set reader (magic 0/1), shared by both record-engine implementations:
each subclasses ``LegacyRecordBatch`` with its own ``record_type``."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from kafka_fast.codecs import compression
from kafka_fast.errors import CorruptRecordError, DecompressionLimitError
from kafka_fast.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
)

from .columns import Columns, pack_column
from .format import (
    ATTR_COMPRESSION_MASK,
    ATTR_LOG_APPEND_TIME,
    LOG_OVERHEAD,
    MIN_LEGACY_LENGTH,
)

_LEGACY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes


def _legacy_message(view, pos: int, end: int, verify_crc: bool):
    """Parse the message at ``pos`` (its offset/size prefix included); returns its fields and
    the position after it. ``end`` bounds the message set."""
    if end - pos < LOG_OVERHEAD:
        raise CorruptRecordError("truncated message header", pos)
    offset, size = struct.unpack_from(">qi", view, pos)
    if size < MIN_LEGACY_LENGTH:
        raise CorruptRecordError(f"message size {size} below the minimum", pos + 8)
    mend = pos + LOG_OVERHEAD + size
    if mend > end:
        raise CorruptRecordError(f"message size {size} beyond the message set", pos + 8)
    _o, _s, crc, magic, attrs = _LEGACY_HEAD.unpack_from(view, pos)
    if magic not in (0, 1):
        raise CorruptRecordError(f"unknown magic {magic}", pos + 16)
    if verify_crc:
        actual = zlib.crc32(view[pos + 16 : mend])
        if actual != crc:
            raise CorruptRecordError(
                f"message CRC mismatch: stored {crc:#010x}, computed {actual:#010x}", pos
            )
    p = pos + 18
    timestamp = -1
    if magic == 1:
        if mend - p < 8:
            raise CorruptRecordError("truncated message timestamp", p)
        (timestamp,) = struct.unpack_from(">q", view, p)
        p += 8
    fields: list[bytes | None] = []
    for what in ("key", "value"):
        if mend - p < 4:
            raise CorruptRecordError(f"truncated message {what} length", p)
        (n,) = struct.unpack_from(">i", view, p)
        p += 4
        if n == -1:
            fields.append(None)
            continue
        if n < -1 or n > mend - p:
            raise CorruptRecordError(f"message {what} length {n} beyond the message", p - 4)
        fields.append(bytes(view[p : p + n]))
        p += n
    if p != mend:
        raise CorruptRecordError(f"{mend - p} unexpected bytes at the end of a message", p)
    return (offset, magic, attrs, timestamp, fields[0], fields[1]), mend


class LegacyRecordBatch:
    """One top-level message of a magic 0/1 message set (a wrapper if compressed)."""

    #: The class of the records made; each implementation's subclass sets its own ``Record``.
    record_type: Any

    partition_leader_epoch = -1
    is_transactional = False
    is_control = False
    producer_id = -1
    producer_epoch = -1
    base_sequence = -1

    def __init__(self, view: memoryview, pos: int, length: int, verify_crc: bool,
                 budget: compression.DecompressionBudget | None = None) -> None:
        end = pos + LOG_OVERHEAD + length
        (offset, magic, attrs, ts, key, value), _ = _legacy_message(view, pos, end, verify_crc)
        self.magic = magic
        self.compression = attrs & ATTR_COMPRESSION_MASK
        self.byte_size = LOG_OVERHEAD + length
        log_append = magic == 1 and bool(attrs & ATTR_LOG_APPEND_TIME)
        if magic == 0:
            self.timestamp_type = TIMESTAMP_NOT_AVAILABLE
        else:
            self.timestamp_type = TIMESTAMP_LOG_APPEND_TIME if log_append else TIMESTAMP_CREATE_TIME
        if self.compression == compression.NONE:
            self._records = [self.record_type(offset, ts, key, value, [])]
        elif self.compression > compression.LZ4:
            raise CorruptRecordError(
                f"compression code {self.compression} is not valid in a magic {magic} message",
                pos + 17,
            )
        else:
            if value is None:
                raise CorruptRecordError("compressed message without a value", pos)
            self._records = self._inner(pos, offset, magic, ts, log_append, value, verify_crc,
                                        budget)
        first = self._records[0]
        last = max(offset, self._records[-1].offset)
        self.base_offset = first.offset
        self.last_offset_delta = last - first.offset
        self.next_offset = last + 1
        self.first_timestamp = first.timestamp
        self.max_timestamp = max(r.timestamp for r in self._records)
        self._count = len(self._records)

    def _inner(self, pos, wrapper_offset, magic, wrapper_ts, log_append, value, verify_crc,
               budget):
        try:
            lease = compression.decompress_pooled(
                self.compression, value, legacy_lz4=magic == 0, budget=budget)
        except CorruptRecordError as exc:
            raise type(exc)(exc.args[0].str(), pos) from None
        if budget is None:
            budget = compression.DecompressionBudget()
        room = budget.records_left()
        with lease:
            inner = lease.view
            msgs = []
            p = 0
            try:
                while p < len(inner):
                    if len(msgs) == room:  # decoding stops here, not after the last record
                        raise budget.too_many_records(room + 1)
                    msg, p = _legacy_message(inner, p, len(inner), verify_crc)
                    if msg[2] & ATTR_COMPRESSION_MASK:
                        raise CorruptRecordError("nested compressed message", p)
                    msgs.append(msg)
            except DecompressionLimitError as exc:
                raise DecompressionLimitError(exc.args[0].str(), pos) from None
            except CorruptRecordError as exc:
                raise CorruptRecordError(
                    f"{exc.args[0].str()} inside a compressed message", pos
                ) from None
        if not msgs:
            raise CorruptRecordError("compressed message holds no messages", pos)
        budget.records += len(msgs)
        # magic 1: inner offsets are relative to the wrapper's (the last record's) offset; a
        # wrapper offset below that (as some producers send) leaves them as they are, as in Kafka.
        shift = wrapper_offset - msgs[-1][0] if magic >= 1 else 0
        shift = max(shift, 0)
        return [
            self.record_type(o + shift, wrapper_ts if log_append else ts, k, v, [])
            for o, _m, _a, ts, k, v in msgs
        ]

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return (
            f"LegacyRecordBatch(magic={self.magic}, base_offset={self.base_offset}, "
            f"records={self._count})"
        )

    def records(self) -> list[Any]:
        return list(self._records)

    def columns(self, defer: bool = False) -> Columns:
        """Every record as packed columns (``defer`` changes nothing: a legacy message's
        records are decoded whole)."""
        recs = self._records
        keys, key_nulls = pack_column([r.key for r in recs])
        values, value_nulls = pack_column([r.value for r in recs])
        return Columns(
            np.array([r.offset for r in recs], dtype=np.int64),
            np.array([r.timestamp for r in recs], dtype=np.int64),
            keys, values, key_nulls, value_nulls, None,
        )
