"""Splitting produce input into records as kcat does (at a delimiter, empty records skipped,
bytes kept exactly), in bounded memory: the input is read in chunks, and a record that grows
past ``limit`` bytes is not held but counted and skipped to its end (``Oversize``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

CHUNK = 1 << 16


class Oversize:
    """A record of ``length`` bytes, over the limit, that was skipped; ``key_split`` tells
    whether it holds the key delimiter (so whether -K would have split it)."""

    __slots__ = ("length", "key_split")

    def __init__(self, length: int, key_split: bool) -> None:
        self.length = length
        self.key_split = key_split

    def __repr__(self) -> str:
        return f"Oversize(length={self.length}, key_split={self.key_split})"


class _Pending:
    """The bytes of the record being read: those held, and how many were dropped already."""

    def __init__(self, limit: int, delim: bytes | None, key_delim: bytes | None) -> None:
        self.limit = limit
        self.delim = delim
        self.key_delim = key_delim or None
        # Bytes kept at the end when a long record is dropped: a record delimiter or a key
        # delimiter may straddle the cut.
        self.keep = max(len(delim or b"\0") - 1, 0) + max(len(key_delim or b"\0") - 1, 0)
        self.buf = bytearray()
        self.start = 0      # where the current record starts in buf
        self.scanned = 0    # buf[start:scanned] holds no record delimiter
        self.dropped = 0    # bytes of the current record dropped (it is over the limit)
        self.key_split = False  # the key delimiter was seen in the dropped bytes

    def add(self, chunk: bytes) -> Iterator[bytes | Oversize]:
        """The records that ``chunk`` completes."""
        self.buf += chunk
        delim = self.delim
        if delim is not None:
            while True:
                i = self.buf.find(delim, max(self.start, self.scanned))
                if i < 0:
                    break
                done = self.finish(i)
                if done is not None:
                    yield done
                self.start = self.scanned = i + len(delim)
            self.scanned = max(self.start, len(self.buf) - len(delim) + 1)
        else:
            self.scanned = len(self.buf)
        # buf[start:scanned] is the record's for sure (no delimiter can begin there)
        if self.dropped + self.scanned - self.start > self.limit:
            self._drop()
        elif self.start:
            del self.buf[:self.start]
            self.scanned -= self.start
            self.start = 0

    def finish(self, end: int) -> bytes | Oversize | None:
        """The record ending at ``end`` (None when it is empty); starts the next one."""
        length = self.dropped + end - self.start
        if length > self.limit:
            split = self.key_split or (self.key_delim is not None
                                       and self.buf.find(self.key_delim, self.start, end) >= 0)
            out: bytes | Oversize | None = Oversize(length, split)
        else:
            out = bytes(self.buf[self.start:end]) if end > self.start else None
        self.dropped = 0
        self.key_split = False
        return out

    def _drop(self) -> None:
        """Forget the held bytes of an over-limit record but the last few (``keep``)."""
        cut = max(len(self.buf) - self.keep, self.start)
        if self.key_delim is not None and not self.key_split:
            # only a key delimiter that ends before a record delimiter could begin counts
            self.key_split = self.buf.find(self.key_delim, self.start, self.scanned) >= 0
        self.dropped += cut - self.start
        del self.buf[:cut]
        self.scanned = max(self.scanned - cut, 0)
        self.start = 0


def split_records(stream: BinaryIO, delim: bytes | None, limit: int,
                  key_delim: bytes | None = None) -> Iterator[bytes | Oversize]:
    """The records of ``stream`` separated by ``delim`` (None: the whole stream is one
    record), empty ones skipped (as kcat). A record longer than ``limit`` bytes comes as an
    ``Oversize`` instead, and at most about ``limit`` + 64 KiB of it is ever held. Reads what
    is available (``read1``), so records are produced as their lines arrive."""
    pending = _Pending(limit, delim, key_delim)
    read = getattr(stream, "read1", None) or stream.read
    while True:
        chunk = read(CHUNK)
        if not chunk:
            break
        yield from pending.add(chunk)
    last = pending.finish(len(pending.buf))
    if last is not None:
        yield last
