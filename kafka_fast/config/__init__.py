"""Client configuration: one table of every supported key, split by the role that uses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import admin, client, consumer, producer
from .table import Config, Key, Registry

REGISTRY = Registry([*client.KEYS, *producer.KEYS, *consumer.KEYS, *admin.KEYS])


def make_config(conf: Mapping[str, Any] | None, role: str) -> Config:
    """Validate ``conf`` for a client of ``role`` (producer, consumer or admin)."""
    return Config(REGISTRY, conf, role)


__all__ = ["Config", "Key", "REGISTRY", "make_config"]
