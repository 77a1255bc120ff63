"""API version negotiation: the highest version both the broker and this client support."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import KafkaError
from .request import kafka_exception


def negotiate(broker_ranges: Iterable[Any],
              ours: Mapping[int, tuple[int, int]]) -> dict[int, int]:
    """``{api_key: version}`` for every API both sides support.

    ``broker_ranges`` are ApiVersionsResponse entries (api_key, min_version, max_version);
    ``ours`` maps keys to this client's (lowest, highest) request versions.
    """
    out: dict[int, int] = {}
    for entry in broker_ranges:
        mine = ours.get(entry.api_key)
        if mine is None:
            continue
        high = min(entry.max_version, mine[1])
        low = max(entry.min_version, mine[0])
        if high >= low:
            out[entry.api_key] = high
    return out


def choose(negotiated: dict[int, int], broker_ranges: dict[int, tuple[int, int]],
           message: Any, requested: int | None, node: str) -> int:
    """The version to send ``message`` at; raises KafkaException(_UNSUPPORTED_FEATURE)."""
    api_key = message.API_KEY
    low, high = broker_ranges.get(api_key, (0, -1))
    if requested is None:
        version = negotiated.get(api_key)
        if version is None:
            raise kafka_exception(
                KafkaError._UNSUPPORTED_FEATURE,
                f"{node} does not support {message.NAME} (API key {api_key})")
        if version > message.MAX_VERSION:
            version = message.MAX_VERSION
            if version < low:
                raise kafka_exception(
                    KafkaError._UNSUPPORTED_FEATURE,
                    f"{node} needs {message.NAME} v{low}+, this request allows up to "
                    f"v{message.MAX_VERSION}")
        return version
    if not (low <= requested <= high) or not (
            message.MIN_VERSION <= requested <= message.MAX_VERSION):
        raise kafka_exception(
            KafkaError._UNSUPPORTED_FEATURE,
            f"{message.NAME} v{requested} is not supported by {node} "
            f"(broker {low}-{high}, client {message.MIN_VERSION}-{message.MAX_VERSION})")
    return requested
