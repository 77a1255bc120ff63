"""What the consumer needs of a group member, and what a member needs of the consumer.

``ClassicGroup`` (JoinGroup/SyncGroup) and ``ConsumerGroupMember`` (KIP-848) both implement
``GroupMember``; they run on the client's I/O thread and tell the polling thread about
assignments, revocations and errors only through ``GroupEvents`` (the consumer's event
queue). ``PollWatch`` is how they learn that the application stopped polling.

Who writes what (``ownership`` checks it): the members' fields are written on the I/O thread
only (the consumer calls them through ``client.call_soon``); of a ``PollWatch``, ``last_poll``
is written by the application thread and ``_rejoin_pending`` by the I/O thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol

from ..errors import KafkaError
from .ownership import armed, owned


class GroupEvents(Protocol):
    """The polling thread's event queue."""

    def post(self, event: tuple) -> None: ...

    def post_error(self, err: KafkaError) -> None: ...


class GroupMember(Protocol):
    """One member of a consumer group (methods other than ``polled`` run on the I/O thread)."""

    group_id: str
    member_id: str
    instance_id: str | None
    #: bumps on every (re)join; events carry it so stale ones are ignored
    epoch: int
    poll_watch: PollWatch

    @property
    def generation(self) -> int: ...

    def subscribe(self, topics: list[str]) -> None: ...

    def revoke_done(self, epoch: int) -> None: ...

    def incremental_revoke_done(self, epoch: int) -> None: ...

    def handle_group_error(self, code: int, api: str) -> None: ...

    def close(self) -> Future | None: ...


@owned
class PollWatch:
    """When the application last polled; a member that left the group because the
    application stopped polling (``max.poll.interval.ms``) rejoins at the next poll."""

    def __init__(self, call_soon: Callable[[Callable[[], None]], object],
                 rejoin: Callable[[], None]) -> None:
        self._call_soon = call_soon
        self._rejoin = rejoin
        #: written by the application thread
        self.last_poll = time.monotonic()
        #: written by the I/O thread
        self._rejoin_pending = False
        armed(self)

    def polled(self) -> None:
        """The application polls (its thread): note the time; if the member left, ask the
        I/O thread to rejoin (it may be asked more than once before it does: once counts)."""
        self.last_poll = time.monotonic()
        if self._rejoin_pending:
            self._call_soon(self._rejoin_once)

    def _rejoin_once(self) -> None:
        """I/O thread: rejoin if still pending."""
        if self._rejoin_pending:
            self._rejoin_pending = False
            self._rejoin()

    def exceeded(self, max_interval: float) -> bool:
        """True if the application has not polled for ``max_interval`` seconds."""
        return time.monotonic() - self.last_poll > max_interval

    def rejoin_on_next_poll(self) -> None:
        """I/O thread: the member left; the next poll rejoins."""
        self._rejoin_pending = True
