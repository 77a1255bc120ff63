"""Connection settings read once from a client Config."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._version import __version__
from .oauthbearer import TokenSource
from .tls import make_ssl_context, uses_sasl, uses_tls

_FAMILIES = {"any": socket.AF_UNSPEC, "v4": socket.AF_INET, "v6": socket.AF_INET6}

if TYPE_CHECKING:
    from ..config.table import Config


@dataclass
class ConnectionSettings:
    client_id: str
    max_in_flight: int
    request_timeout: float  # seconds
    setup_timeout: float
    idle_timeout: float  # 0 = never
    send_buffer: int
    receive_buffer: int
    nodelay: bool
    family: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    api_version_request: bool
    ssl_context: ssl.SSLContext | None
    verify_hostname: bool
    sasl: bool
    config: Config
    max_response_bytes: int = 100000000
    keepalive: bool = False
    #: OAUTHBEARER tokens shared by the client's connections (None for other mechanisms).
    oauth_tokens: TokenSource | None = None
    software_name: str = "kafka-fast"
    software_version: str = __version__

    @classmethod
    def from_config(cls, config: Config) -> ConnectionSettings:
        return cls(
            client_id=config["client.id"],
            max_in_flight=config["max.in.flight.requests.per.connection"],
            request_timeout=config["request.timeout.ms"] / 1000.0,
            setup_timeout=config["socket.connection.setup.timeout.ms"] / 1000.0,
            idle_timeout=config["connections.max.idle.ms"] / 1000.0,
            send_buffer=config["send.buffer.bytes"],
            receive_buffer=config["receive.buffer.bytes"],
            nodelay=config["socket.nagle.disable"],
            family=_FAMILIES[config["broker.address.family"]],
            reconnect_backoff_ms=config["reconnect.backoff.ms"],
            reconnect_backoff_max_ms=config["reconnect.backoff.max.ms"],
            api_version_request=config["api.version.request"],
            ssl_context=make_ssl_context(config) if uses_tls(config) else None,
            verify_hostname=config["ssl.endpoint.identification.algorithm"] == "https",
            sasl=uses_sasl(config),
            config=config,
            max_response_bytes=_max_response_bytes(config),
            keepalive=config["socket.keepalive.enable"],
            software_name=config["client.software.name"],
            software_version=config["client.software.version"],
            oauth_tokens=(TokenSource.from_config(config)
                          if uses_sasl(config) and config["sasl.mechanism"] == "OAUTHBEARER"
                          else None),
        )


def _max_response_bytes(config: Mapping[str, Any]) -> int:
    """``receive.message.max.bytes``, raised to fit a Fetch of ``fetch.max.bytes`` (as
    librdkafka does)."""
    limit = config["receive.message.max.bytes"]
    try:
        fetch = config["fetch.max.bytes"]
    except KeyError:
        return limit
    return max(limit, fetch + 512)
