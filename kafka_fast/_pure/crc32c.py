"""CRC32C (Castagnoli) in pure Python: slicing-by-8, the twin of ``kafka_fast._native._crc32c``."""

from __future__ import annotations

import operator
import struct
from typing import Any

_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _tables() -> tuple[tuple[int, ...], ...]:
    """``tables[k][b]``: the CRC state after byte ``b`` followed by ``k`` zero bytes."""
    first = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
        first.append(crc)
    tables = [first]
    for _ in range(7):
        prev = tables[-1]
        tables.append([(c >> 8) ^ first[c & 0xFF] for c in prev])
    return tuple(tuple(t) for t in tables)


_T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7 = _tables()
_PAIRS = struct.Struct("<II")


def _as_bytes(data: Any) -> memoryview:
    try:
        view = memoryview(data)
    except TypeError as exc:
        raise TypeError(
            "crc32c() data must be a C-contiguous bytes-like object "
            f"(bytes, bytearray, memoryview, numpy array), not {type(data).__name__}: {exc}"
        ) from None
    if not view.c_contiguous:
        raise TypeError(
            "crc32c() data must be a C-contiguous bytes-like object "
            f"(bytes, bytearray, memoryview, numpy array), not {type(data).__name__}: "
            "the buffer is not C-contiguous"
        )
    if view.format == "B" and view.ndim == 1:
        return view
    return view.cast("B") if view.nbytes else memoryview(b"")


def _start_value(value: Any) -> int:
    if type(value) is not int:
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"crc32c() value must be an int, not {type(value).__name__}") from None
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"crc32c() value must be in 0..0xFFFFFFFF, got {value!r}")
    return value


def crc32c(data: Any, value: int = 0) -> int:
    """Return the CRC32C of ``data`` continued from ``value`` (0 to start).

    ``data`` is any C-contiguous buffer; ``crc32c(b, crc32c(a)) == crc32c(a + b)``.
    """
    view = _as_bytes(data)
    crc = _start_value(value) ^ 0xFFFFFFFF
    whole = len(view) & ~7
    t0, t1, t2, t3, t4, t5, t6, t7 = _T0, _T1, _T2, _T3, _T4, _T5, _T6, _T7
    for lo, hi in _PAIRS.iter_unpack(view[:whole]):
        lo ^= crc
        crc = (
            t7[lo & 0xFF]
            ^ t6[(lo >> 8) & 0xFF]
            ^ t5[(lo >> 16) & 0xFF]
            ^ t4[lo >> 24]
            ^ t3[hi & 0xFF]
            ^ t2[(hi >> 8) & 0xFF]
            ^ t1[(hi >> 16) & 0xFF]
            ^ t0[hi >> 24]
        )
    for byte in view[whole:]:
        crc = t0[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_impl() -> str:
    """Name of this implementation: ``"python"``."""
    return "python"


def available_impls() -> tuple[str, ...]:
    """The paths this module offers: only ``"python"``."""
    return ("python",)


def use_impl(name: str | None = None) -> None:
    """Accept ``"python"`` (or None), the only path; anything else raises ValueError."""
    if name is not None and name != "python":
        raise ValueError(f"CRC32C path {name!r} is not available here; available: python")
