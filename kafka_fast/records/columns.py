"""``Columns``: one decoded batch as packed columns, the type both record-engine
implementations return from ``columns()``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .buffers import byte_view


class Columns:
    """One batch as packed columns (see ``kafka_fast.records`` for the conventions).

    ``offsets``/``timestamps``: int64[N]. ``keys``/``values``: ``(data uint8[M], offsets
    int64[N+1])``, record i being ``data[offsets[i]:offsets[i+1]]``. ``key_nulls``/
    ``value_nulls``: bool[N], True where the field is null (its slice is then empty).
    ``headers``: None when no record has headers, else a list of N lists of (str, bytes|None).
    """

    __slots__ = ("offsets", "timestamps", "keys", "values", "key_nulls", "value_nulls", "headers")

    def __init__(self, offsets, timestamps, keys, values, key_nulls, value_nulls, headers) -> None:
        self.offsets = offsets
        self.timestamps = timestamps
        self.keys = keys
        self.values = values
        self.key_nulls = key_nulls
        self.value_nulls = value_nulls
        self.headers = headers

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, name: str) -> Any:
        if name not in Columns.__slots__:
            raise KeyError(name)
        return getattr(self, name)

    @staticmethod
    def _unpack(packed, nulls) -> list[bytes | None]:
        data, offsets = packed
        raw = byte_view(data)
        return [
            None if nulls[i] else bytes(raw[offsets[i] : offsets[i + 1]])
            for i in range(len(offsets) - 1)
        ]

    def key_list(self) -> list[bytes | None]:
        """Keys as a list of bytes/None (creates one object per record)."""
        return self._unpack(self.keys, self.key_nulls)

    def value_list(self) -> list[bytes | None]:
        """Values as a list of bytes/None (creates one object per record)."""
        return self._unpack(self.values, self.value_nulls)

    def field_ends(self, field: str) -> Any:
        """The cumulative lengths (``offsets`` of the packed column) of ``"keys"`` or
        ``"values"``, without copying any field bytes."""
        return self[field][1]

    def copy_fields(self, field: str, start: int, stop: int, out: np.ndarray, at: int) -> int:
        """Copy the bytes of ``"keys"`` or ``"values"`` of records ``[start, stop)`` into
        ``out[at:]``; returns how many."""
        data, ends = self[field]
        n = len(ends) - 1
        if not 0 <= start <= stop <= n:
            raise ValueError(f"record range [{start}, {stop}) outside a batch of {n}")
        lo, hi = int(ends[start]), int(ends[stop])
        if at < 0 or at + hi - lo > len(out):
            raise ValueError(f"{hi - lo} field bytes do not fit at {at} of {len(out)}")
        out[at:at + hi - lo] = byte_view(data)[lo:hi]
        return hi - lo


class DeferredColumns(Columns):
    """Columns of an uncompressed batch whose key and value bytes stay in the fetched batch
    until they are asked for: ``keys``/``values`` copy them out once, on first use, and
    ``copy_fields`` writes a run of them straight into a larger column (one copy instead of
    two). Made by the compiled engine's ``RecordBatch.columns(defer=True)``."""

    __slots__ = ("_batch", "_pos", "_ends", "_packed")

    def __init__(self, offsets, timestamps, key_ends, value_ends, key_nulls, value_nulls,
                 headers, batch, key_pos, value_pos) -> None:
        self.offsets = offsets
        self.timestamps = timestamps
        self.key_nulls = key_nulls
        self.value_nulls = value_nulls
        self.headers = headers
        self._batch = batch
        self._pos = {"keys": key_pos, "values": value_pos}
        self._ends = {"keys": key_ends, "values": value_ends}
        self._packed: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _field(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        packed = self._packed.get(field)
        if packed is None:
            ends = self._ends[field]
            data = np.empty(int(ends[-1]), dtype=np.uint8)
            self.copy_fields(field, 0, len(ends) - 1, data, 0)
            packed = self._packed[field] = (data, ends)
        return packed

    @property  # type: ignore[override]
    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        return self._field("keys")

    @property  # type: ignore[override]
    def values(self) -> tuple[np.ndarray, np.ndarray]:
        return self._field("values")

    def field_ends(self, field: str) -> Any:
        return self._ends[field]

    def copy_fields(self, field: str, start: int, stop: int, out: np.ndarray, at: int) -> int:
        packed = self._packed.get(field)
        if packed is not None:
            return super().copy_fields(field, start, stop, out, at)
        return self._batch.copy_fields(self._pos[field], self._ends[field], start, stop, out, at)


def pack_column(fields: list[bytes | None]) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """A list of bytes/None as a packed ``(data, offsets)`` column and its null mask."""
    n = len(fields)
    offsets = np.zeros(n + 1, dtype=np.int64)
    nulls = np.zeros(n, dtype=np.bool_)
    total = 0
    for i, f in enumerate(fields):
        if f is None:
            nulls[i] = True
        else:
            total += len(f)
        offsets[i + 1] = total
    data = np.frombuffer(b"".join(f for f in fields if f is not None), dtype=np.uint8).copy()
    return (data, offsets), nulls
