"""The configuration table mechanism: typed keys, validation, and librdkafka-style parsing."""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

#: The clients a key may apply to ("share" is the ShareConsumer, KIP-932).
ROLES = ("producer", "consumer", "share", "admin")
#: How a warning names a client of each role.
ROLE_NAMES = {"producer": "producer", "consumer": "consumer", "share": "share consumer",
              "admin": "admin"}


@dataclass(frozen=True)
class Key:
    """One configuration property.

    ``kind`` is one of: int, float, bool, str, list (comma-separated), enum, callable,
    password, any. ``roles`` says which clients accept it (``ROLES``: a client given a key of
    other roles only warns and ignores it); ``librdkafka``/``java`` say whether
    those clients have a property of the same name and meaning; ``ignored`` keys are accepted
    for compatibility and have no effect (documented as such). An enum's value matches its
    choices ignoring case (as librdkafka's do) unless ``exact_case``.
    """

    name: str
    kind: str
    default: Any
    doc: str
    roles: tuple[str, ...] = ROLES
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    aliases: tuple[str, ...] = ()
    librdkafka: bool = True
    java: bool = True
    ignored: bool = False
    #: A regular expression a str value must match in full (checked after the kind).
    pattern: str = ""
    extra: dict = field(default_factory=dict, compare=False)
    exact_case: bool = False

    def parse(self, value: Any, given_as: str | None = None) -> Any:
        """Convert and check ``value``; raise ``ConfigError`` naming the key as the user wrote
        it (``given_as``, e.g. an alias) if it is wrong."""
        kind = self.kind
        shown = given_as or self.name
        out: Any
        try:
            if value is None:
                if self.default is None:
                    return None
                if kind in ("str", "list", "password"):
                    return self.default  # librdkafka: NULL resets a string property
                raise ValueError("None is not allowed")
            if kind == "int":
                if isinstance(value, bool):
                    raise ValueError("expected an integer")
                out = int(value)
            elif kind == "float":
                out = float(value)
            elif kind == "bool":
                out = _parse_bool(value)
            elif kind in ("str", "password"):
                if not isinstance(value, str):
                    raise ValueError("expected a string")
                out = value
            elif kind == "list":
                out = _parse_list(value)
            elif kind == "enum":
                out = str(value).strip()
                if not self.exact_case:
                    out = {c.lower(): c for c in self.choices}.get(out.lower(), out)
                if out not in self.choices:
                    raise ValueError(f"expected one of {', '.join(self.choices)}")
            elif kind == "callable":
                if not callable(value):
                    raise ValueError("expected a callable")
                out = value
            else:
                out = value
        except (TypeError, ValueError) as exc:
            given = "(hidden)" if kind == "password" else repr(value)  # never echo a secret
            raise ConfigError(
                f'Invalid value {given} for configuration property "{shown}": {exc}'
            ) from None
        if kind in ("int", "float") and (
                (self.minimum is not None and out < self.minimum)
                or (self.maximum is not None and out > self.maximum)):
            shown_value = f"{out:g}" if kind == "float" else str(out)  # as librdkafka prints
            raise ConfigError(f'Configuration property "{shown}" value {shown_value} is outside '
                              f"allowed range {_bound(self.minimum)}..{_bound(self.maximum)}")
        if self.pattern and re.fullmatch(self.pattern, out) is None:
            raise ConfigError(f'Invalid value {out!r} for configuration property "{shown}": '
                              f"must match {self.pattern}")
        return out


def _bound(limit: float | None) -> str:
    """A range bound as librdkafka prints it (integers without a decimal point)."""
    if limit is None:
        return ""
    return str(int(limit)) if float(limit).is_integer() else f"{limit:g}"


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _parse_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, Iterable):
        return [str(part).strip() for part in value]
    raise ValueError("expected a comma-separated string or a list")


class Registry:
    """All known keys, by name and alias."""

    def __init__(self, keys: Iterable[Key], refused: Mapping[str, str] | None = None) -> None:
        self.keys: dict[str, Key] = {}
        #: Names refused with a reason (librdkafka properties that cannot work here).
        self.refused: dict[str, str] = dict(refused or {})
        self._by_name: dict[str, Key] = {}
        for key in keys:
            if key.name in self._by_name:
                raise RuntimeError(f"configuration key {key.name} defined twice")
            self.keys[key.name] = key
            self._by_name[key.name] = key
            for alias in key.aliases:
                self._by_name[alias] = key

    def lookup(self, name: str) -> Key | None:
        """The key for ``name`` or one of its aliases."""
        return self._by_name.get(name)


class Config(Mapping):
    """A validated configuration for one client role; missing keys read as their defaults."""

    def __init__(self, registry: Registry, conf: Mapping[str, Any] | None, role: str,
                 stacklevel: int = 4) -> None:
        """``stacklevel``: the frame the warnings name, as ``warnings.warn`` counts from here
        (4: the caller of whatever called ``make_config``, the application creating a
        client)."""
        if conf is None:
            conf = {}
        if not isinstance(conf, Mapping):
            raise TypeError("configuration must be a dict of property names to values")
        self.role = role
        self._registry = registry
        self._values: dict[str, Any] = {}
        self.explicit: set[str] = set()
        for name, value in conf.items():
            key = registry.lookup(name)
            if key is None and name in registry.refused:
                raise ConfigError(f'Configuration property "{name}" is not supported: '
                                  f"{registry.refused[name]}")
            if key is None:
                raise ConfigError(f'No such configuration property: "{name}"')
            if role not in key.roles:
                # librdkafka warns and ignores a property of the other client role.
                warnings.warn(f'Configuration property "{name}" does not apply to a '
                              f"{ROLE_NAMES[role]} and is ignored", stacklevel=stacklevel)
                continue
            self._values[key.name] = key.parse(value, name)
            self.explicit.add(key.name)
            if key.ignored:
                warnings.warn(f'Configuration property "{name}" is accepted for compatibility '
                              "and has no effect", stacklevel=stacklevel)
        self.source = dict(conf)

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        key = self._registry.lookup(name)
        if key is None:
            raise KeyError(name)
        if key.name in self._values:
            return self._values[key.name]
        return key.default

    def __iter__(self):
        return iter(self._registry.keys)

    def __len__(self) -> int:
        return len(self._registry.keys)

    def replace(self, name: str, value: Any) -> None:
        """Set ``name`` to ``value`` after the configuration was built (validated as at
        construction); for settings a running client reads again, such as SASL credentials."""
        key = self._registry.lookup(name)
        if key is None:
            raise ConfigError(f'No such configuration property: "{name}"')
        self._values[key.name] = key.parse(value)
        self.explicit.add(key.name)

    def is_set(self, name: str) -> bool:
        """True if the user gave ``name`` explicitly."""
        key = self._registry.lookup(name)
        return key is not None and key.name in self.explicit

    def require(self, name: str) -> Any:
        """The value of ``name``; ``ConfigError`` if it is unset and has no default."""
        value = self[name]
        if value is None or value == "" or value == []:
            raise ConfigError(f'Configuration property "{name}" is required')
        return value
