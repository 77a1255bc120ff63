"""Free loopback ports and bounded waits for a listening socket."""

from __future__ import annotations

import os
import random
import socket
import time

from kafka_fast.bench.embedded import free_port

LOOPBACK = "127.0.0.1"

__all__ = ["LOOPBACK", "free_port", "reserved_port", "wait_listening"]


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def reserved_port() -> int:
    """A free loopback port below the kernel's ephemeral range, for a listener that is closed
    and opened again during a test (a disabled proxy): a port from ``free_port`` may meanwhile be
    handed to another socket as an ephemeral port, then the listener cannot come back. The start
    of the search depends on the process id, so parallel test workers take different ports."""
    low = max(_ephemeral_low(), 12000)
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(200):
        port = rng.randrange(10000, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            return port
    return free_port()


def wait_listening(port: int, timeout: float, alive=lambda: True) -> None:
    """Wait until something accepts TCP connections on ``port``.

    ``alive`` is polled so a process that died is reported at once instead of
    after the whole timeout. Raises TimeoutError or RuntimeError.
    """
    deadline = time.monotonic() + timeout
    while True:
        if not alive():
            raise RuntimeError(f"process serving port {port} exited before listening")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listening on {LOOPBACK}:{port} after {timeout:.1f}s")
        time.sleep(0.02)
