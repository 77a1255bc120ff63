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
        if name not in self.__slots__:
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
