"""Who calls the AdminClient's ``error_cb`` / ``throttle_cb``.

Until the application first calls ``AdminClient.poll()``, a thread of the client's own serves
them (so a client that never polls still hears of errors). From the first ``poll()`` on,
as in confluent-kafka, only ``poll()`` serves them, on the calling thread, and returns how
many it served.
"""

from __future__ import annotations

import threading

from ..net.client import KafkaClient

#: How long the serving thread waits for an event before looking at its stop flag (seconds).
_WAKE_INTERVAL = 0.1


class EventServer:
    """Serves a client's events on its own thread until ``poll`` takes over."""

    def __init__(self, client: KafkaClient, name: str) -> None:
        self._client = client
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, name=f"kafka_fast-events-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._client.serve_events(_WAKE_INTERVAL)
            except Exception:  # a failing callback must not stop the thread
                self._client.log.exception("admin client event callback raised")

    def _take_over(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            if thread is not threading.current_thread():
                thread.join()

    def poll(self, timeout: float) -> int:
        """Serve queued events on this thread (waiting up to ``timeout`` seconds for the
        first); the number served."""
        self._take_over()
        return self._client.serve_events(max(0.0, timeout))

    def close(self) -> None:
        self._take_over()
