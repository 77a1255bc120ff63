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
A view over one uncompressed-or-not batch shares that batch's decoded columns; a view over
several batches concatenates them once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._impl import load
from ..errors import KafkaError
from ..message import Message
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


def _concat_packed(parts: list[tuple[Any, Any, Any, int, int]]) -> PackedColumn:
    """Concatenate ``(data, offsets, nulls, start, stop)`` slices into one column."""
    if len(parts) == 1:
        data, offs, nulls, start, stop = parts[0]
        if start == 0 and stop == len(offs) - 1 and offs[0] == 0:
            data = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
            has_null = nulls is not None and bool(nulls.any())
            return PackedColumn(data, offs, nulls if has_null else None)
    datas = []
    offsets = [_EMPTY_OFFSETS]
    null_parts = []
    base = 0
    any_null = False
    for data, offs, nulls, start, stop in parts:
        lo = int(offs[start])
        hi = int(offs[stop])
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(data, dtype=np.uint8)
        datas.append(arr[lo:hi])
        offsets.append(offs[start + 1:stop + 1] - (lo - base))
        base += hi - lo
        part_nulls = nulls[start:stop] if nulls is not None else np.zeros(stop - start, bool)
        null_parts.append(part_nulls)
        if not any_null and part_nulls.any():
            any_null = True
    data = np.concatenate(datas) if datas else np.zeros(0, dtype=np.uint8)
    return PackedColumn(
        data,
        np.concatenate(offsets),
        np.concatenate(null_parts).astype(bool, copy=False) if any_null else None,
    )


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
            self.keys = _concat_packed([
                (s.cols.keys[0], s.cols.keys[1], s.cols.key_nulls, s.start, s.stop)
                for _, _, s in pieces])
            self.values = _concat_packed([
                (s.cols.values[0], s.cols.values[1], s.cols.value_nulls, s.start, s.stop)
                for _, _, s in pieces])
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
                pa.array(self.topic_index, pa.int32()), pa.array(self.topics, pa.string())),
            pa.array(self.partitions, pa.int32()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.timestamps.view("datetime64[ms]"), pa.timestamp("ms")),
            pa.array(self.timestamp_types, pa.int8()),
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
