"""Separates the serializer entries of a serializing client's configuration from the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ConfigError


def pop_serdes(conf: Mapping[str, Any], *names: str) -> tuple[list[Any], dict[str, Any]]:
    """``([conf[name] or None for each name], the configuration without them)``.

    Each present entry must be callable (or None); ``<name>.builder`` entries, which
    confluent-kafka offers for Schema Registry serializers, are refused with a clear error.
    """
    if not isinstance(conf, Mapping):
        raise TypeError(f"configuration must be a dict, not {type(conf).__name__}")
    rest = dict(conf)
    found = []
    for name in names:
        if f"{name}.builder" in rest:
            raise ConfigError(f"{name}.builder is not supported: pass a ready {name}")
        value = rest.pop(name, None)
        if value is not None and not callable(value):
            raise ConfigError(f"{name} must be callable, not {type(value).__name__}")
        found.append(value)
    return found, rest
