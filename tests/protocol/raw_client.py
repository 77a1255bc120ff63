"""A blocking socket that sends frames built by the codec and decodes the replies.

Only for tests that show the codec against real brokers: no retries, no pipelining.
"""

from __future__ import annotations

import socket
import struct

from kafka_fast.protocol import by_name, decode_response, frame_request

TIMEOUT = 10.0


class RawConnection:
    def __init__(self, host: str, port: int, client_id: str = "kafka-fast-test") -> None:
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        self.sock.settimeout(TIMEOUT)
        self.client_id = client_id
        self.correlation_id = 0
        self.last_frame = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, chunks: list) -> None:
        views = [memoryview(c).cast("B") for c in chunks]
        while views:
            sent = self.sock.sendmsg(views)
            while views and sent >= len(views[0]):
                sent -= len(views[0])
                views.pop(0)
            if views and sent:
                views[0] = views[0][sent:]

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:])
            if k == 0:
                raise ConnectionError(f"connection closed after {got} of {n} bytes")
            got += k
        return bytes(buf)

    def next_correlation_id(self) -> int:
        self.correlation_id += 1
        return self.correlation_id

    def exchange(self, chunks: list) -> bytes:
        """Send a whole frame given as chunks; the reply frame (without its size prefix)."""
        self._send(chunks)
        (size,) = struct.unpack(">i", self._recv_exact(4))
        self.last_frame = self._recv_exact(size)
        return self.last_frame

    def call(self, request, version: int):
        """Send ``request`` at ``version`` and return the decoded response."""
        self.correlation_id += 1
        self._send(frame_request(request, version, self.correlation_id, self.client_id))
        (size,) = struct.unpack(">i", self._recv_exact(4))
        self.last_frame = self._recv_exact(size)
        response_cls = by_name(request.NAME[: -len("Request")] + "Response")
        correlation_id, response = decode_response(self.last_frame, response_cls, version)
        assert correlation_id == self.correlation_id
        return response

