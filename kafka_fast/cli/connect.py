"""Reaching the cluster: say what is being waited for, and give up with one clear line as soon
as every bootstrap server has failed (refused, unresolvable, or no answer within
``socket.connection.setup.timeout.ms``) instead of waiting out the whole ``--timeout``."""

from __future__ import annotations

import argparse
import logging
import socket
import time
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import KafkaError, KafkaException
from .options import seconds
from .output import status

if TYPE_CHECKING:
    from ..admin import ClusterMetadata


class MetadataSource(Protocol):
    """A Producer, Consumer or AdminClient: anything that answers ``list_topics``."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata: ...

# How long the CLI lets one connection attempt take unless -X/-F says otherwise: kcat gives up
# on the initial metadata after 5 s; a broker that takes longer to accept a connection is
# down for a person at a terminal.
CONNECT_TIMEOUT_MS = 10_000
ANNOUNCE_AFTER_S = 1.0


class ConnectError(Exception):
    """Every bootstrap server failed; reported in one line with exit status 1."""


class ClientLog(logging.Handler):
    """Watches the client's warnings: the latest one (for error lines) and whether the client
    has reported every broker down."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.message = ""
        self.all_down = False

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("_ALL_BROKERS_DOWN"):
            self.all_down = True
        else:
            self.message = text


def connect_config(conf: dict[str, Any], timeout_s: float) -> None:
    """Bound one connection attempt by ``CONNECT_TIMEOUT_MS`` (or the command's timeout,
    checked here for every command: UsageError naming --timeout)."""
    seconds(timeout_s)
    conf.setdefault("socket.connection.setup.timeout.ms",
                    max(1, min(CONNECT_TIMEOUT_MS, int(timeout_s * 1000))))


def _check_resolvable(bootstrap: str) -> None:
    hosts = []
    for item in bootstrap.split(","):
        host = item.strip().rsplit(":", 1)[0].strip("[]")
        if "://" in host:
            host = host.split("://", 1)[1]
        hosts.append(host)
    for host in hosts:
        try:
            socket.getaddrinfo(host, None)
            return
        except (socket.gaierror, UnicodeError):
            continue
    raise ConnectError(f"cannot resolve any bootstrap server in {bootstrap!r}")


def connect(client: MetadataSource, args: argparse.Namespace, conf: dict[str, Any],
            topic: str | None = None) -> ClusterMetadata:
    """Metadata (for ``topic`` or all topics) from ``client``, saying on stderr what is being
    waited for after a second; ConnectError once every bootstrap server has failed, and
    KafkaException(_TIMED_OUT) after ``args.timeout``."""
    log: ClientLog = args.client_log
    bootstrap = conf["bootstrap.servers"]
    _check_resolvable(bootstrap)
    start = time.monotonic()
    deadline = start + args.timeout
    announced = False
    while True:
        remaining = deadline - time.monotonic()
        try:
            return client.list_topics(topic, timeout=max(0.01, min(0.25, remaining)))
        except KafkaException as exc:
            # no broker connected yet (_TRANSPORT) or no answer yet (_TIMED_OUT): keep waiting
            if exc.args[0].code() not in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
                raise
        if log.all_down:
            why = f": {log.message}" if log.message else ""
            raise ConnectError(f"cannot connect to {bootstrap}{why}")
        if time.monotonic() >= deadline:
            raise KafkaException(KafkaError.of(
                KafkaError._TIMED_OUT, f"no answer from {bootstrap} within {args.timeout:g}s"))
        if not announced and time.monotonic() - start >= ANNOUNCE_AFTER_S:
            announced = True
            status(args, f"waiting for {bootstrap} to answer (connecting, up to "
                         f"{float(conf['socket.connection.setup.timeout.ms']) / 1000:g}s per attempt)")
