"""CRC32C (Castagnoli), the checksum of Kafka record batches.

``crc32c(data, value=0) -> int`` over any C-contiguous bytes-like object, continuing from
``value``; ``crc32c_impl() -> str`` names the path in use ("vpclmul-avx512", "pclmul-fold",
"sse4.2-3way", "armv8", "slicing-by-8" in the compiled module, "python" in the pure one).
The compiled path is picked once from the CPU; ``KAFKA_FAST_CRC32C_IMPL=<name>`` asks for a
specific one and ``KAFKA_FAST_NO_EXTENSIONS=1`` selects the pure-Python twin.
"""

from __future__ import annotations

from ._impl import load

_module, NATIVE = load("_crc32c", "crc32c")

crc32c = _module.crc32c
crc32c_impl = _module.crc32c_impl
available_impls = _module.available_impls

__all__ = ["NATIVE", "available_impls", "crc32c", "crc32c_impl"]
