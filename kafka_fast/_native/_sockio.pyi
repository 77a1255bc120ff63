"""Types of the compiled socket I/O module (``_sockio.pyx``; twin: ``kafka_fast._pure.sockio``)."""

import socket
from collections.abc import Iterable
from typing import Any

NATIVE: bool
MAX_IOV: int

def released_calls() -> int: ...
def send_chunks(sock: socket.socket, chunks: Iterable[Any], nogil_bytes: int = ...) -> int: ...
def recv_into(sock: socket.socket, buffer: Any, start: int, end: int,
              nogil_bytes: int = ...) -> int: ...
