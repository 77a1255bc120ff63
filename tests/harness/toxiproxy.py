"""Toxiproxy (Shopify's fault-injecting TCP proxy) as a test peer, driven over its HTTP API.

The server binary is built from its Go module by ``tools/fetch_toxiproxy.sh`` into a cache
outside the repository (next to the Kafka jars). ``Toxiproxy`` starts it on a free loopback
port; ``proxy()`` creates one TCP proxy (listen -> upstream); ``Proxy.add()`` puts a toxic on
it (latency, bandwidth, timeout, reset_peer, slicer, limit_data, slow_close: see
https://github.com/Shopify/toxiproxy#toxics for their attributes) and ``Proxy.clear()``
removes them all. Only the standard library (urllib) talks to the API.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from harness.apache_kafka import START_TIMEOUT, ApacheKafka, cache_dir, start_apache_kafka
from harness.ports import LOOPBACK, free_port, reserved_port, wait_listening
from harness.process import ManagedProcess

VERSION = "2.5.0"
API_TIMEOUT = 10.0


class ToxiproxyUnavailable(RuntimeError):
    """The toxiproxy server binary is missing (the message says how to build it)."""


def binary() -> Path:
    """The toxiproxy server built by tools/fetch_toxiproxy.sh (TOXIPROXY_SERVER overrides);
    raises ToxiproxyUnavailable saying what to do."""
    override = os.environ.get("TOXIPROXY_SERVER")
    path = Path(override) if override else cache_dir() / f"toxiproxy-{VERSION}" / "bin" / "server"
    if not os.access(path, os.X_OK):
        go = "go" if shutil.which("go") else "/usr/local/go/bin/go"
        raise ToxiproxyUnavailable(
            f"toxiproxy {VERSION} not at {path}: run tools/fetch_toxiproxy.sh "
            f"(needs Go, here {go}, and the Go module proxy)")
    return path


def require_toxiproxy() -> None:
    """Skip the test (fail it under CI=true) when the server binary is missing."""
    try:
        binary()
    except ToxiproxyUnavailable as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


class ToxiproxyError(RuntimeError):
    """The API answered with an error status."""


class Toxiproxy:
    """A running toxiproxy server on 127.0.0.1 (its API port chosen free)."""

    def __init__(self, workdir: Path) -> None:
        self.api_port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        self.process = ManagedProcess(
            [str(binary()), "-host", LOOPBACK, "-port", str(self.api_port)],
            workdir / "toxiproxy.log")
        try:
            wait_listening(self.api_port, 15.0, self.process.alive)
        except BaseException:
            self.process.stop()
            raise
        self.url = f"http://{LOOPBACK}:{self.api_port}"

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One API call; returns the decoded JSON answer (None when empty)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=API_TIMEOUT) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise ToxiproxyError(f"{method} {path}: {exc.code} {exc.read()!r}") from exc
        return json.loads(raw) if raw.strip() else None

    def proxy(self, name: str, upstream_port: int, listen_port: int | None = None) -> Proxy:
        """Create proxy ``name`` from ``listen_port`` (default: a free one) to
        ``upstream_port``, both on 127.0.0.1."""
        port = reserved_port() if listen_port is None else listen_port
        self.call("POST", "/proxies", {"name": name, "listen": f"{LOOPBACK}:{port}",
                                       "upstream": f"{LOOPBACK}:{upstream_port}",
                                       "enabled": True})
        return Proxy(self, name, port)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self.call("POST", "/reset")

    def log_tail(self) -> str:
        return self.process.log_tail()

    def stop(self) -> None:
        self.process.stop()


class Proxy:
    """One proxy of a Toxiproxy server: ``port`` is where clients connect."""

    def __init__(self, server: Toxiproxy, name: str, port: int) -> None:
        self.server = server
        self.name = name
        self.port = port
        self._count = 0

    def add(self, kind: str, stream: str = "downstream", toxicity: float = 1.0,
            **attributes: int) -> str:
        """Add a toxic of type ``kind`` on ``stream`` ("downstream": broker to client,
        "upstream": client to broker); returns its name."""
        self._count += 1
        name = f"{kind}_{stream}_{self._count}"
        self.server.call("POST", f"/proxies/{self.name}/toxics",
                         {"name": name, "type": kind, "stream": stream,
                          "toxicity": toxicity, "attributes": attributes})
        return name

    def remove(self, toxic: str) -> None:
        self.server.call("DELETE", f"/proxies/{self.name}/toxics/{toxic}")

    def toxics(self) -> list[dict[str, Any]]:
        return list(self.server.call("GET", f"/proxies/{self.name}/toxics") or [])

    def clear(self) -> None:
        """Remove every toxic of this proxy."""
        for toxic in self.toxics():
            self.remove(toxic["name"])

    def set_upstream(self, upstream_port: int) -> None:
        """Relay new connections to ``upstream_port`` on 127.0.0.1 from now on."""
        self.server.call("POST", f"/proxies/{self.name}",
                         {"upstream": f"{LOOPBACK}:{upstream_port}", "enabled": True})

    def set_enabled(self, enabled: bool) -> None:
        """Disabled, the proxy closes its connections and refuses new ones."""
        self.server.call("POST", f"/proxies/{self.name}", {"enabled": enabled})


class ProxiedCluster:
    """A 3-node Apache Kafka cluster whose clients reach each broker only through its own
    proxy: ``bootstrap`` is the proxies' addresses (the brokers' CLIENT listeners advertise
    them), ``direct`` the PLAINTEXT listeners (for set-up and read-back, no fault),
    ``proxies`` the proxies by node id."""

    def __init__(self, cluster: ApacheKafka, server: Toxiproxy, proxies: dict[int, Proxy]):
        self.cluster = cluster
        self.server = server
        self.proxies = proxies
        self.bootstrap = cluster.client_bootstrap
        self.direct = cluster.bootstrap

    def topic(self, prefix: str, partitions: int = 3) -> str:
        """A new topic (replication factor 3), every replica in sync."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.cluster.create_topic(name, partitions, 3)
        self.cluster.wait_in_sync(name)
        return name

    def leader(self, topic: str, partition: int = 0) -> int:
        from confluent_kafka.admin import AdminClient

        md = AdminClient({"bootstrap.servers": self.direct}).list_topics(topic, timeout=10)
        return md.topics[topic].partitions[partition].leader

    def stop(self) -> None:
        self.cluster.discard()
        self.server.stop()


def start_proxied_cluster(workdir: Path, timeout: float = START_TIMEOUT) -> ProxiedCluster:
    """Toxiproxy and three Kafka nodes, one proxy in front of each node's CLIENT listener
    (``timeout``: seconds the nodes may take to start)."""
    server = Toxiproxy(workdir / "toxiproxy")
    listen = {i: reserved_port() for i in (1, 2, 3)}
    try:
        cluster = start_apache_kafka(workdir / "kafka", brokers=3, client_ports=listen,
                                     timeout=timeout)
    except BaseException:
        server.stop()
        raise
    try:
        proxies = {i: server.proxy(f"broker{i}", node.ports["CLIENT"], listen[i])
                   for i, node in cluster.nodes.items()}
    except BaseException:
        cluster.discard()
        server.stop()
        raise
    return ProxiedCluster(cluster, server, proxies)
