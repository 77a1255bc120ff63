"""A broker readiness probe: one ApiVersions v0 round trip built from raw bytes."""

from __future__ import annotations

import socket
import ssl
import struct

API_VERSIONS = 18
_CORRELATION_ID = 0x4B46  # arbitrary, checked in the reply
_CLIENT_ID = b"kafka-fast-probe"


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def api_versions(
    host: str,
    port: int,
    timeout: float = 2.0,
    ssl_context: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
) -> dict[int, tuple[int, int]]:
    """Send ApiVersions v0 and return ``{api_key: (min_version, max_version)}``.

    Raises ConnectionError/OSError on transport failure and RuntimeError when the
    broker answers with an error code or a mismatched correlation id.
    """
    body = struct.pack(">hhih", API_VERSIONS, 0, _CORRELATION_ID, len(_CLIENT_ID)) + _CLIENT_ID
    raw = socket.create_connection((host, port), timeout=timeout)
    sock: socket.socket = raw
    try:
        sock.settimeout(timeout)
        if ssl_context is not None:
            sock = ssl_context.wrap_socket(raw, server_hostname=server_hostname or host)
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _read_exact(sock, 4))
        payload = _read_exact(sock, size)
    finally:
        sock.close()
    correlation_id, error_code, count = struct.unpack_from(">ihi", payload, 0)
    if correlation_id != _CORRELATION_ID:
        raise RuntimeError(f"ApiVersions reply has correlation id {correlation_id}")
    if error_code != 0:
        raise RuntimeError(f"ApiVersions reply has error code {error_code}")
    versions = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", payload, 10 + 6 * i)
        versions[key] = (lo, hi)
    return versions
