"""What the metadata manager and the coordinator cache need from their owner (the KafkaClient).

``ClusterLink`` is the whole of it: scheduling on the I/O thread, sending requests, choosing
a broker, and installing a new ``ClusterView``. The cluster package does not import the
network package at run time; the KafkaClient implements this protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from .view import ClusterView


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """The I/O loop: calls run on its thread (callable from any thread)."""

    def call_soon(self, fn: Callable[[], object]) -> None: ...

    def call_later(self, delay: float, fn: Callable[[], object]) -> Timer: ...


class ClusterLink(Protocol):
    """The owner of a ``MetadataManager`` and a ``CoordinatorCache``."""

    @property
    def loop(self) -> Scheduler:
        """Where the manager's callbacks run (no start-up implied)."""

    @property
    def cluster(self) -> ClusterView:
        """The current cluster view."""

    def ensure_started(self) -> None:
        """Start the I/O thread if it is not running yet."""

    def send(self, node_id: int, request: Any) -> Future:
        """Send ``request`` to ``node_id``; a Future of the decoded response."""

    def send_any(self, request: Any, *, timeout_ms: int | None = None) -> Future:
        """Send ``request`` to the least-loaded broker; the Future carries ``node_id``."""

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The version negotiated with ``node_id`` for ``api_key`` (None if unknown)."""

    def pick_node(self, exclude: set[int]) -> int | None:
        """The least-loaded usable broker not in ``exclude`` (None if there is none)."""

    def set_cluster(self, view: ClusterView) -> None:
        """Install ``view``, the result of a metadata refresh."""

    def learn_broker(self, node_id: int, host: str, port: int) -> None:
        """Remember the address of a broker metadata has not listed (a coordinator)."""

    def rebootstrap(self, reason: str) -> None:
        """Forget the learned brokers and go back to the bootstrap list (KIP-899)."""
