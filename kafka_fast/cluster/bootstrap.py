"""Parsing and ordering of ``bootstrap.servers``."""

from __future__ import annotations

import random
import socket
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
    """The parsed, de-duplicated bootstrap addresses in random order (empty when none is
    given: the client is built, as librdkafka's is, but cannot reach a cluster)."""
    seen: dict[tuple[str, int], None] = {}
    for s in servers:
        seen.setdefault(parse_address(s), None)
    out = list(seen)
    (rng or random).shuffle(out)
    return out


def canonical_addresses(addresses: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """``client.dns.lookup=resolve_canonical_bootstrap_servers_only``, as the Java client
    does it: each bootstrap host is resolved to its IP addresses and each address is looked
    up in reverse for its canonical host name (the address itself when it has none), so a
    DNS alias names the real hosts (Kerberos service names, TLS host names). A host that
    does not resolve is kept as given (its connections report the failure)."""
    out: dict[tuple[str, int], None] = {}
    for host, port in addresses:
        try:
            infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        except OSError:
            out.setdefault((host, port), None)
            continue
        for info in infos:
            ip = str(info[4][0])
            try:
                name = socket.gethostbyaddr(ip)[0]
            except OSError:
                name = ip
            out.setdefault((name, port), None)
    return list(out)
