"""Client configuration: one table of every supported key, split by the role that uses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import admin, client, consumer, librdkafka_only, producer
from .table import Config, Key, Registry

REGISTRY = Registry([*client.KEYS, *producer.KEYS, *consumer.KEYS, *admin.KEYS,
                     *librdkafka_only.KEYS], refused=librdkafka_only.REFUSED)


def make_config(conf: Mapping[str, Any] | None, role: str) -> Config:
    """Validate ``conf`` for a client of ``role`` (producer, consumer or admin)."""
    return Config(REGISTRY, conf, role)


def client_config(conf: Any, kwargs: Mapping[str, Any], role: str) -> Config:
    """A client constructor's configuration: the ``conf`` dict (or None) updated with its
    keyword arguments. No configuration at all, or anything but a dict, raises TypeError, as confluent-kafka's clients do
    (a string such as "bootstrap.servers=..." is not read as one)."""
    if conf is None and not kwargs:
        raise TypeError("expected configuration dict")  # confluent-kafka's words
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"expected configuration dict, got {type(conf).__name__}")
    return make_config({**(conf or {}), **kwargs}, role)


__all__ = ["Config", "Key", "REGISTRY", "client_config", "make_config"]
