"""Byte views of buffer-protocol objects, sized by the buffer, never by ``len()``."""

from __future__ import annotations

from typing import Any

_EMPTY = memoryview(b"")


def byte_view(obj: Any, what: str = "data") -> memoryview:
    """A 1-D unsigned-byte view of a C-contiguous buffer (any shape or format, including
    shapes with a zero such as ``(N, 0)``): its length is the buffer's ``nbytes``.

    TypeError for objects without the buffer protocol, ValueError for non-contiguous ones.
    """
    view = memoryview(obj)
    if not view.c_contiguous:
        raise ValueError(f"{what} must be a contiguous buffer")
    if view.format == "B" and view.ndim == 1:
        return view
    if view.nbytes == 0:
        return _EMPTY
    return view.cast("B")


def destination(into: Any, total: int) -> memoryview:
    """The first ``total`` bytes of the writable buffer ``into(total)`` returns, where a
    batch of ``total`` bytes is written (``encode_batch(..., into=)``).

    TypeError for a read-only buffer, ValueError for one shorter than ``total``.
    """
    dest = byte_view(into(total), "the buffer into() returned")
    if dest.readonly:
        raise TypeError("into() must return a writable buffer")
    if dest.nbytes < total:
        raise ValueError(f"into() returned a buffer of {dest.nbytes} bytes for a batch of "
                         f"{total}")
    return dest[:total]
