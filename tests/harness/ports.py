"""Free loopback ports and bounded waits for a listening socket."""

from __future__ import annotations

import socket
import time

from kafka_fast.bench.embedded import free_port

LOOPBACK = "127.0.0.1"

__all__ = ["LOOPBACK", "free_port", "wait_listening"]


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
