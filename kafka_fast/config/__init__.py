"""Client configuration: one table of every supported key, split by the role that uses it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import admin, client, consumer, librdkafka_only, producer
from .table import Config, Key, Registry

REGISTRY = Registry([*client.KEYS, *producer.KEYS, *consumer.KEYS, *admin.KEYS,
                     *librdkafka_only.KEYS], refused=librdkafka_only.REFUSED)


def make_config(conf: Mapping[str, Any] | None, role: str, stacklevel: int = 4) -> Config:
    """Validate ``conf`` for a client of ``role`` (producer, consumer, share or admin; a key
    of other roles warns and is ignored). Warnings name the caller of the caller of this
    function (``stacklevel`` as ``Config`` counts it)."""
    return Config(REGISTRY, conf, role, stacklevel)


def client_config(conf: Any, kwargs: Mapping[str, Any], role: str) -> Config:
    """A client constructor's configuration: the ``conf`` dict (or None) updated with its
    keyword arguments. No configuration at all, or anything but a dict, raises TypeError, as
    confluent-kafka's clients do (a string such as "bootstrap.servers=..." is not read as
    one). ``default.topic.config`` (a dict) is merged in last, as confluent-kafka applies it."""
    if conf is None and not kwargs:
        raise TypeError("expected configuration dict")  # confluent-kafka's words
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"expected configuration dict, got {type(conf).__name__}")
    merged = {**(conf or {}), **kwargs}
    topic_conf = merged.pop("default.topic.config", None)
    if topic_conf is not None:
        # confluent-kafka's deprecated dict of topic properties, applied after the others.
        if not isinstance(topic_conf, Mapping):
            raise TypeError("default.topic.config must be a dict of topic properties, got "
                            f"{type(topic_conf).__name__}")
        merged.update(topic_conf)
    return make_config(merged, role, stacklevel=5)


__all__ = ["Config", "Key", "REGISTRY", "client_config", "make_config"]
