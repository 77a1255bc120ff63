"""When the I/O thread's socket calls run without the interpreter lock.

A thread that gives the interpreter lock up waits up to one switch interval (5 ms by default)
to get it back while another thread runs Python code, so the I/O thread keeps the lock for its
socket calls while the application may be busy in Python (``produce()``, ``poll()``). While
an application thread is inside a bulk call (``produce_batch``, ``consume_batch``) the
application mostly waits (for encoder threads, acknowledgements, fetched records) and the lock
comes back at once: then a ``sendmsg`` of at least :data:`BULK_NOGIL_BYTES` and a ``recv``
into a range that large run without the lock, beside the encoder and application threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Bytes of one socket call from which it runs without the lock during bulk calls.
BULK_NOGIL_BYTES = 64 * 1024
#: ``nogil_bytes`` meaning "never give the lock up".
KEEP_LOCK = -1


class LockPolicy:
    """One client's rule for its socket calls: ``nogil_bytes`` is the size from which a call
    gives the interpreter lock up (``KEEP_LOCK``: never). Thread-safe."""

    def __init__(self) -> None:
        self._bulk_calls = 0
        self._lock = threading.Lock()
        self.nogil_bytes = KEEP_LOCK

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Marks an application thread's bulk call for its duration."""
        with self._lock:
            self._bulk_calls += 1
            self.nogil_bytes = BULK_NOGIL_BYTES
        try:
            yield
        finally:
            with self._lock:
                self._bulk_calls -= 1
                if not self._bulk_calls:
                    self.nogil_bytes = KEEP_LOCK

    @property
    def bulk_calls(self) -> int:
        """Bulk calls in progress."""
        return self._bulk_calls
