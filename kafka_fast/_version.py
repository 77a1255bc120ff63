"""The package version, defined in one place, and confluent-kafka's version functions."""

from __future__ import annotations

__version__ = "0.1.0"


def version() -> str:
    """The package version string, as ``confluent_kafka.version()`` gives its own."""
    return __version__


def libversion() -> tuple[str, int]:
    """``(version string, version integer)`` of the engine behind the client, in the shape of
    ``confluent_kafka.libversion()``: the integer is librdkafka's ``0xMMmmrrxx`` layout (major,
    minor, revision, 0xff for a release). kafka_fast has no librdkafka; its engine is itself."""
    major, minor, revision = (int(part) for part in __version__.split(".")[:3])
    return __version__, (major << 24) | (minor << 16) | (revision << 8) | 0xFF
