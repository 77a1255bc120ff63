"""``RecordBatchView``: many fetched records as columns, with no Python object per record.

Columns (all of length N):

- ``partitions`` int32, ``offsets`` int64, ``timestamps`` int64 (ms), ``timestamp_types`` int8;
- ``keys`` / ``values``: ``PackedColumn`` = ``(data uint8[M], offsets int64[N+1])`` (record i is
  ``data[offsets[i]:offsets[i+1]]``) plus ``nulls`` (bool[N], or None when nothing is null);
- topics: a view may span several topics. ``topics`` lists them and ``topic_index`` (int32)
  says which one each record belongs to (a dictionary-encoded column); ``topic`` is the name
  when the view holds a single topic, else None. ``to_arrow()`` writes the topic column as an
  Arrow dictionary array;
- ``headers``: per-record lists, built only when asked for (``consume_batch(headers=True)``).

Records of one partition are in offset order; partitions follow one another in whole runs.
A view over one whole batch shares that batch's decoded columns; a view over several batches
writes each key and value once into its own columns, straight from the fetched response for
uncompressed batches (``DeferredColumns``) or from the decompressed batch's columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._impl import load
from ..errors import KafkaError
from ..message import Message
from ..records.arrow import numeric, strings
from .fetch_decode import Segment

append_messages = load("_columns", "columns")[0].append_messages


class PackedColumn:
    """A binary column: ``data`` uint8[M], ``offsets`` int64[N+1], ``nulls`` bool[N] or None.

    Unpacks as the pair ``(data, offsets)``; ``col[i]`` is bytes or None.
    """

    __slots__ = ("data", "offsets", "nulls")

    def __init__(self, data: np.ndarray, offsets: np.ndarray, nulls: np.ndarray | None) -> None:
        self.data = data
        self.offsets = offsets
        self.nulls = nulls

    def __iter__(self) -> Iterator[Any]:
        yield self.data
        yield self.offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes | None:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("PackedColumn index out of range")
        if self.nulls is not None and self.nulls[i]:
            return None
        return self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def to_pylist(self) -> list[bytes | None]:
        """Every field as bytes or None (one object per record)."""
        return [self[i] for i in range(len(self))]


_EMPTY_OFFSETS = np.zeros(1, dtype=np.int64)


def _concat_packed(parts: list[tuple[Any, int, int]], field: str) -> PackedColumn:
    """One packed column of ``field`` (``"keys"`` or ``"values"``) over ``(columns, start,
    stop)`` runs of batches: each run's bytes are copied once, straight from where its batch
    holds them (the fetched response itself for ``DeferredColumns``)."""
    null_field = "key_nulls" if field == "keys" else "value_nulls"
    if len(parts) == 1:
        cols, start, stop = parts[0]
        data, offs = cols[field]
        nulls = cols[null_field]
        if start == 0 and stop == len(offs) - 1 and offs[0] == 0:
            data = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
            has_null = nulls is not None and bool(nulls.any())
            return PackedColumn(data, offs, nulls if has_null else None)
    n = sum(stop - start for _, start, stop in parts)
    total = 0
    for cols, start, stop in parts:
        ends = cols.field_ends(field)
        total += int(ends[stop]) - int(ends[start])
    data = np.empty(total, dtype=np.uint8)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    out_nulls: np.ndarray | None = None
    k = base = 0
    for cols, start, stop in parts:
        ends = cols.field_ends(field)
        m = stop - start
        np.subtract(ends[start + 1:stop + 1], int(ends[start]) - base,
                    out=offsets[k + 1:k + 1 + m])
        base += cols.copy_fields(field, start, stop, data, base)
        nulls = cols[null_field]
        if nulls is not None and m:
            part_nulls = nulls[start:stop]
            if part_nulls.any():
                if out_nulls is None:
                    out_nulls = np.zeros(n, dtype=np.bool_)
                out_nulls[k:k + m] = part_nulls
        k += m
    return PackedColumn(data, offsets, out_nulls)


class RecordBatchView:
    """Columns of consecutive records from one or more partitions (see the module doc)."""

    def __init__(self, pieces: list[tuple[int, int, Segment]], topics: list[str],
                 with_headers: bool = False) -> None:
        """``pieces``: ``(topic number, partition, segment)`` in delivery order."""
        self.topics = topics
        self._pieces = pieces
        counts = np.fromiter((len(s) for _, _, s in pieces), dtype=np.int64, count=len(pieces))
        n = int(counts.sum()) if len(pieces) else 0
        self._n = n
        if not pieces:
            self.partitions = np.zeros(0, np.int32)
            self.topic_index = np.zeros(0, np.int32)
            self.offsets = np.zeros(0, np.int64)
            self.timestamps = np.zeros(0, np.int64)
            self.timestamp_types = np.zeros(0, np.int8)
            self.keys = PackedColumn(np.zeros(0, np.uint8), _EMPTY_OFFSETS, None)
            self.values = PackedColumn(np.zeros(0, np.uint8), _EMPTY_OFFSETS, None)
            self.leader_epochs = np.zeros(0, np.int32)
        else:
            self.partitions = np.repeat(
                np.fromiter((p for _, p, _ in pieces), np.int32, len(pieces)), counts)
            self.topic_index = np.repeat(
                np.fromiter((t for t, _, _ in pieces), np.int32, len(pieces)), counts)
            self.timestamp_types = np.repeat(
                np.fromiter((s.timestamp_type for _, _, s in pieces), np.int8, len(pieces)),
                counts)
            self.leader_epochs = np.repeat(
                np.fromiter((s.leader_epoch for _, _, s in pieces), np.int32, len(pieces)),
                counts)
            if len(pieces) == 1:
                s = pieces[0][2]
                self.offsets = s.cols.offsets[s.start:s.stop]
                self.timestamps = s.cols.timestamps[s.start:s.stop]
            else:
                self.offsets = np.concatenate([s.cols.offsets[s.start:s.stop]
                                               for _, _, s in pieces])
                self.timestamps = np.concatenate([s.cols.timestamps[s.start:s.stop]
                                                  for _, _, s in pieces])
            runs = [(s.cols, s.start, s.stop) for _, _, s in pieces]
            self.keys = _concat_packed(runs, "keys")
            self.values = _concat_packed(runs, "values")
        self.headers = self._headers() if with_headers else None

    @property
    def topic(self) -> str | None:
        """The topic name when every record belongs to one topic, else None."""
        return self.topics[0] if len(self.topics) == 1 else None

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def _headers(self) -> list[list[tuple[str, bytes | None]] | None]:
        out: list = []
        for _, _, s in self._pieces:
            h = s.cols.headers
            if h is None:
                out.extend([None] * (s.stop - s.start))
            else:
                out.extend(x if x else None for x in h[s.start:s.stop])
        return out

    def __iter__(self) -> Iterator[Message]:
        """The records as ``Message`` objects (built a segment at a time, compiled)."""
        for t, partition, seg in self._pieces:
            out: list[Message] = []
            append_messages(out, self.topics[t], partition, seg.cols, seg.start, seg.stop,
                            seg.timestamp_type, seg.leader_epoch)
            yield from out

    def to_arrow(self):
        """A ``pyarrow.Table`` sharing this view's buffers (pyarrow is an optional dependency).

        Columns: topic (dictionary<int32, string>), partition int32, offset int64,
        timestamp timestamp[ms], timestamp_type int8, key and value large_binary, and headers
        (list<struct<key: string, value: binary>>) when the view has them.
        """
        try:
            import pyarrow as pa
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("RecordBatchView.to_arrow() needs pyarrow installed") from exc

        def binary(col: PackedColumn):
            validity = None
            null_count = 0
            if col.nulls is not None:
                null_count = int(col.nulls.sum())
                validity = pa.py_buffer(np.packbits(~col.nulls, bitorder="little"))
            return pa.Array.from_buffers(
                pa.large_binary(), self._n,
                [validity, pa.py_buffer(col.offsets), pa.py_buffer(col.data)],
                null_count=null_count)

        arrays = [
            pa.DictionaryArray.from_arrays(
                numeric(np.asarray(self.topic_index, np.int32), pa.int32()),
                strings(self.topics)),
            numeric(np.asarray(self.partitions, np.int32), pa.int32()),
            numeric(np.asarray(self.offsets, np.int64), pa.int64()),
            numeric(np.asarray(self.timestamps, np.int64), pa.timestamp("ms")),
            numeric(np.asarray(self.timestamp_types, np.int8), pa.int8()),
            binary(self.keys),
            binary(self.values),
        ]
        names = ["topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value"]
        if self.headers is not None:
            htype = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
            arrays.append(pa.array(
                [None if h is None else [{"key": k, "value": v} for k, v in h]
                 for h in self.headers], htype))
            names.append("headers")
        return pa.Table.from_arrays(arrays, names=names)

    def __repr__(self) -> str:
        return f"RecordBatchView(records={self._n}, topics={self.topics})"


def eof_error(topic: str, partition: int, offset: int) -> KafkaError:
    """The error carried by a ``_PARTITION_EOF`` message."""
    return KafkaError.of(KafkaError._PARTITION_EOF,
                      f"Fetch from broker reached end of partition {topic} [{partition}] "
                      f"at offset {offset}")
