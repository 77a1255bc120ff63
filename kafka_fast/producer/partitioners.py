"""confluent-kafka's partitioner functions: the partition a key goes to among
``partition_count`` partitions, with the same hashes the producer's ``partitioner`` setting
uses (``murmur2`` as Java's default partitioner, ``consistent`` CRC32 and ``fnv1a`` as
librdkafka's); public as ``kafka_fast.murmur2``, ``kafka_fast.consistent`` and ``kafka_fast.fnv1a``
(and through ``kafka_fast.cimpl``)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["consistent", "fnv1a", "murmur2"]


def _checked(key: object, partition_count: object) -> bytes:
    if isinstance(partition_count, bool) or not isinstance(partition_count, int):
        raise TypeError(f"partition_count must be an int, not {type(partition_count).__name__}")
    if partition_count <= 0:
        raise ValueError(f"partition_count must be > 0, got {partition_count}")
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"a bytes-like object is required, not '{type(key).__name__}'")
    return bytes(key)


def _hashes() -> tuple[Callable[[bytes], int], Callable[[bytes], int], Callable[[bytes], int]]:
    from .partitioner import consistent, fnv1a, murmur2

    return murmur2, consistent, fnv1a


def murmur2(key: bytes, partition_count: int) -> int:
    """The partition of ``key``: Murmur2 as Java's client computes it."""
    data = _checked(key, partition_count)
    return (_hashes()[0](data) & 0x7FFFFFFF) % partition_count


def consistent(key: bytes, partition_count: int) -> int:
    """The partition of ``key``: CRC32 modulo the partition count (librdkafka's
    ``consistent``)."""
    data = _checked(key, partition_count)
    return _hashes()[1](data) % partition_count


def fnv1a(key: bytes, partition_count: int) -> int:
    """The partition of ``key``: FNV-1a modulo the partition count (librdkafka's ``fnv1a``)."""
    data = _checked(key, partition_count)
    return _hashes()[2](data) % partition_count
