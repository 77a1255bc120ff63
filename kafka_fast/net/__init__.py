"""Network core: the I/O thread, broker connections and the KafkaClient built on them.

Names are imported on first use, so the cluster modules can use the small helpers here
(backoff, requests) without loading the client.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "KafkaClient": "kafka_fast.net.client",
    "ClientEvent": "kafka_fast.net.events",
    "EventQueue": "kafka_fast.net.events",
    "ThrottleEvent": "kafka_fast.net.events",
    "BufferPool": "kafka_fast.net.framing",
    "VersionedRequest": "kafka_fast.net.request",
}


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'kafka_fast.net' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
