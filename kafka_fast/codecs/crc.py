"""CRC32C (Castagnoli), the checksum of Kafka record batches.

``crc32c(data, value=0) -> int`` over any C-contiguous bytes-like object (bytes, bytearray,
memoryview, numpy array), continuing from ``value``: ``crc32c(b, crc32c(a)) == crc32c(a + b)``.
``crc32c_impl() -> str`` names the path in use: "vpclmul-avx512", "vpclmul-avx2",
"pclmul-fold", "sse4.2-3way", "armv8" or "slicing-by-8" in the compiled module, "python" in
the pure one; ``available_impls()`` lists the paths this CPU supports, best first.
The compiled path is picked once from the CPU; ``KAFKA_FAST_CRC32C_IMPL=<name>`` asks for a
specific one and ``KAFKA_FAST_NO_EXTENSIONS=1`` selects the pure-Python twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._impl import load

if TYPE_CHECKING:
    # Both implementations have the compiled module's interface (kafka_fast/_native/*.pyi).
    from .._native import _crc32c as _module

    NATIVE: bool
else:
    _module, NATIVE = load("_crc32c", "crc32c")

crc32c = _module.crc32c
crc32c_impl = _module.crc32c_impl
available_impls = _module.available_impls

__all__ = ["NATIVE", "available_impls", "crc32c", "crc32c_impl"]
