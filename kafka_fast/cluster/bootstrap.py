"""Parsing and ordering of ``bootstrap.servers``."""

from __future__ import annotations

import random
from collections.abc import Iterable

from ..errors import ConfigError

DEFAULT_PORT = 9092


def parse_address(text: str) -> tuple[str, int]:
    """``host:port``, ``[v6addr]:port`` or ``SCHEME://host:port`` -> (host, port)."""
    addr = text.strip()
    if "://" in addr:
        addr = addr.split("://", 1)[1]
    addr = addr.rstrip("/")
    if not addr:
        raise ConfigError(f'Invalid bootstrap server "{text}"')
    if addr.startswith("["):
        host, sep, rest = addr[1:].partition("]")
        if not sep:
            raise ConfigError(f'Invalid bootstrap server "{text}": missing "]"')
        port_text = rest[1:] if rest.startswith(":") else ""
    elif addr.count(":") == 1:
        host, port_text = addr.split(":")
    elif ":" in addr:  # bare IPv6 address
        host, port_text = addr, ""
    else:
        host, port_text = addr, ""
    if not host:
        raise ConfigError(f'Invalid bootstrap server "{text}": empty host')
    if not port_text:
        return host, DEFAULT_PORT
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f'Invalid bootstrap server "{text}": bad port {port_text!r}') from None
    if not 0 < port < 65536:
        raise ConfigError(f'Invalid bootstrap server "{text}": port {port} out of range')
    return host, port


def bootstrap_addresses(servers: Iterable[str], rng: random.Random | None = None
                        ) -> list[tuple[str, int]]:
    """The parsed, de-duplicated bootstrap addresses in random order."""
    seen: dict[tuple[str, int], None] = {}
    for s in servers:
        seen.setdefault(parse_address(s), None)
    if not seen:
        raise ConfigError('Configuration property "bootstrap.servers" is required')
    out = list(seen)
    (rng or random).shuffle(out)
    return out
