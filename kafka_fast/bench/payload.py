"""Benchmark records: fixed-size random values and keys, held once in packed form."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Payload:
    """N values of ``size`` bytes and keys of ``key_size`` bytes, as 2-D uint8 arrays."""

    values: np.ndarray
    keys: np.ndarray

    @classmethod
    def make(cls, n: int, size: int, key_size: int, seed: int = 7) -> Payload:
        rng = np.random.default_rng(seed)
        # Text-like values so compression has something to do, as real payloads do.
        alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789 ,:{}\"", dtype=np.uint8)
        values = alphabet[rng.integers(0, len(alphabet), size=(n, size), dtype=np.uint8)]
        keys = alphabet[rng.integers(0, len(alphabet), size=(n, key_size), dtype=np.uint8)]
        return cls(np.ascontiguousarray(values), np.ascontiguousarray(keys))

    def __len__(self) -> int:
        return len(self.values)

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.keys.nbytes

    def as_bytes_lists(self) -> tuple[list[bytes], list[bytes]]:
        """Per-record bytes objects, for clients whose API takes one record at a time."""
        return [row.tobytes() for row in self.values], [row.tobytes() for row in self.keys]
