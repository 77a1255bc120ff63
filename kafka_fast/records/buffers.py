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
