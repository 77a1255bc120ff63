"""Index arrays that ``produce_batch`` calls borrow and give back (bounded, thread-safe).

A call of ``produce_batch`` needs a partition per record and the records' order grouped by
partition: arrays of 4 and 8 bytes per record. Made fresh each call, a large one is memory the
kernel must fault in and clear again every time; borrowed from here, the next call writes
into pages already in place.
"""

from __future__ import annotations

import threading

import numpy as np


class ScratchArrays:
    """1-D arrays lent to one caller at a time. ``take(n, dtype)`` gives an array of at least
    ``n`` entries (a free one of that dtype, or a new one); ``give`` takes it back. At most
    ``max_bytes`` wait unused: an array that would pass the bound is dropped."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._free: list[np.ndarray] = []
        self._lock = threading.Lock()

    def take(self, n: int, dtype: type) -> np.ndarray:
        """An array of ``dtype`` with at least ``n`` entries (its contents are undefined)."""
        want = np.dtype(dtype)
        with self._lock:
            best = -1
            for i, arr in enumerate(self._free):
                if arr.dtype == want and len(arr) >= n and (
                        best < 0 or len(arr) < len(self._free[best])):
                    best = i
            if best >= 0:
                return self._free.pop(best)
        return np.empty(max(n, 1024), dtype=want)

    def give(self, arr: np.ndarray) -> None:
        """Take ``arr`` back (the caller keeps no view of it)."""
        with self._lock:
            if self.held_bytes_locked() + arr.nbytes <= self.max_bytes:
                self._free.append(arr)

    def held_bytes(self) -> int:
        """Bytes of the arrays waiting to be reused."""
        with self._lock:
            return self.held_bytes_locked()

    def held_bytes_locked(self) -> int:
        return sum(a.nbytes for a in self._free)
