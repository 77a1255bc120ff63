"""Kafka record batches: encode (``encode_batch``, ``RecordBatchBuilder``) and decode
(``decode_batches`` -> ``RecordBatch.records()`` / ``.columns()``), magic 2 and legacy 0/1.

The compiled engine is used when built, else the pure-Python twin (``KAFKA_FAST_NO_EXTENSIONS=1``
forces the latter); ``NATIVE`` tells which.

Conventions
-----------
Record fields (``values``/``keys`` of ``encode_batch``) may be given as:

- a sequence of bytes-like objects or None (None = null key / null value);
- a 2-D ``uint8`` numpy array, one row per record (every field the row width; no nulls);
- a packed tuple ``(data, offsets)`` or ``(data, offsets, nulls)``: ``data`` any bytes-like,
  ``offsets`` a 1-D int64 numpy array of N+1 boundaries (record i is
  ``data[offsets[i]:offsets[i+1]]``), ``nulls`` an optional length-N bool/uint8 array, true
  where the field is null (its slice is then ignored).

``keys=None`` makes every key null. Timestamps: None (now, in ms), one int for all records, or a
sequence/int64 array of N. Headers: None, one dict or list of ``(str, bytes | None)`` tuples
applied to every record, or a list of N per-record dicts/lists (or None). Header values are
bytes-like, str (encoded as utf-8) or None; anything else (an int, say) raises TypeError naming
the header. Every bytes-like argument is sized by its buffer (``memoryview(x).nbytes``), never
by ``len(x)``.

``RecordBatchBuilder``: ``append`` returns False (adding nothing) when the record would take
the batch past ``batch_size`` (uncompressed bytes, header included; the first record always
fits); ``size_in_bytes`` is a property; ``set_producer_state(producer_id, producer_epoch,
base_sequence, transactional)`` may be called until ``build()``, which returns the batch bytes
(and the same bytes again if called twice). ``patch_producer_fields(buf, producer_id,
producer_epoch, base_sequence, transactional=None)`` returns a copy of a built batch with those
fields replaced and its CRC recomputed (for retries after an epoch bump).

``RecordBatch.columns()`` returns ``Columns`` with the same packed convention: ``offsets`` and
``timestamps`` int64[N]; ``keys``/``values`` = ``(data uint8[M], offsets int64[N+1])`` pairs where
a null field has an empty slice and is flagged in ``key_nulls``/``value_nulls`` (bool[N]);
``headers`` is None when no record has headers, else N per-record lists. So
``(cols.values[0], cols.values[1], cols.value_nulls)`` is a valid packed input again.

``RecordBatch.records()`` returns ``Record`` objects (``offset, timestamp, key, value,
headers``; ``headers`` is a list, empty when the record has none). The compiled ``Record`` is not
tracked by the garbage collector (decoding creates many), so never store a record in its own
header list.

``RecordBatch.timestamp_type`` uses ``kafka_fast.message``'s constants: 0 not available
(magic 0), 1 create time, 2 log-append time (then every record carries the batch max timestamp).

``decode_batches(data, verify_crc=True, allow_partial=True)`` returns every complete batch; a
trailing partial batch (normal at the end of a Fetch response) is ignored, or raises with
``allow_partial=False``. Batch headers and CRCs are checked there; records are parsed (and
decompressed) on ``records()``/``columns()``. Legacy magic 0/1 message sets decode as one
``LegacyRecordBatch`` per top-level message (a compressed wrapper holds several records).

Malformed input raises ``kafka_fast.errors.CorruptRecordError`` with the byte position of the
fault in ``data`` (for faults inside compressed records: the position of their batch).
Decompressed sizes are capped by ``kafka_fast.codecs.compression.MAX_DECOMPRESSED_SIZE``, per
batch and for all batches of one ``decode_batches`` call together (its ``budget``, a
``compression.DecompressionBudget``, may be shared by several calls); above it
``DecompressionLimitError``, a ``CorruptRecordError``, names the limit. The same budget caps the
records that compressed legacy messages expand to (``compression.MAX_DECOMPRESSED_RECORDS``
for all of one call together): they are decoded at once, one object per record.

Layout: the shared types (``columns``: ``Columns``; ``format``: the wire format; ``legacy``: the
magic 0/1 reader; ``buffers``: ``byte_view``) are used by both implementations, the compiled
``kafka_fast._native._records`` and its twin ``kafka_fast._pure.records``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_fast._impl import load

from ..codecs.compression import CODEC_IDS, CODEC_NAMES, codec_id
from .columns import Columns
from .format import CONTROL_ABORT, CONTROL_COMMIT, HEADER_SIZE, decode_control_key
from .legacy import LegacyRecordBatch

#: The names the implementation provides (the compiled module or its twin).
_FROM_IMPL = (
    "encode_batch", "RecordBatchBuilder", "decode_batches", "RecordBatch", "Record",
    "patch_producer_fields", "encode_varint", "encode_varlong", "decode_varint",
    "decode_varlong", "size_of_varint", "zigzag_encode", "zigzag_decode",
)

if TYPE_CHECKING:
    # Both implementations have the compiled module's interface (kafka_fast/_native/*.pyi).
    from kafka_fast._native import _records as _impl

    NATIVE: bool
    encode_batch = _impl.encode_batch
    RecordBatchBuilder = _impl.RecordBatchBuilder
    decode_batches = _impl.decode_batches
    RecordBatch = _impl.RecordBatch
    Record = _impl.Record
    patch_producer_fields = _impl.patch_producer_fields
    encode_varint = _impl.encode_varint
    encode_varlong = _impl.encode_varlong
    decode_varint = _impl.decode_varint
    decode_varlong = _impl.decode_varlong
    size_of_varint = _impl.size_of_varint
    zigzag_encode = _impl.zigzag_encode
    zigzag_decode = _impl.zigzag_decode
else:

    def __getattr__(name: str) -> Any:
        """Choose the implementation on first use of one of its names (or ``NATIVE``): both
        import this package's shared modules, so it cannot be chosen while this package is
        being imported."""
        if name not in _FROM_IMPL and name not in ("_impl", "NATIVE"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        impl, native = load("_records", "records")
        names = globals()
        names.update({n: getattr(impl, n) for n in _FROM_IMPL}, _impl=impl, NATIVE=native)
        return names[name]

__all__ = [
    "CODEC_IDS",
    "CODEC_NAMES",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "HEADER_SIZE",
    "NATIVE",
    "Columns",
    "LegacyRecordBatch",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "codec_id",
    "decode_batches",
    "decode_control_key",
    "decode_varint",
    "decode_varlong",
    "encode_batch",
    "encode_varint",
    "encode_varlong",
    "patch_producer_fields",
    "size_of_varint",
    "zigzag_decode",
    "zigzag_encode",
]
