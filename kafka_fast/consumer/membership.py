"""What the consumer needs of a group member, and what a member needs of the consumer.

``ClassicGroup`` (JoinGroup/SyncGroup) and ``ConsumerGroupMember`` (KIP-848) both implement
``GroupMember``; they run on the client's I/O thread and tell the polling thread about
assignments, revocations and errors only through ``GroupEvents`` (the consumer's event
queue). ``PollWatch`` is how they learn that the application stopped polling.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Protocol

from ..errors import KafkaError


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


class PollWatch:
    """When the application last polled; a member that left the group because the
    application stopped polling (``max.poll.interval.ms``) rejoins at the next poll."""

    def __init__(self, call_soon: Callable[[Callable[[], None]], object],
                 rejoin: Callable[[], None]) -> None:
        self._call_soon = call_soon
        self._rejoin = rejoin
        self.last_poll = time.monotonic()
        self._rejoin_pending = False

    def polled(self) -> None:
        """The application polls (its thread): note the time, rejoin if the member left."""
        self.last_poll = time.monotonic()
        if self._rejoin_pending:
            self._rejoin_pending = False
            self._call_soon(self._rejoin)

    def exceeded(self, max_interval: float) -> bool:
        """True if the application has not polled for ``max_interval`` seconds."""
        return time.monotonic() - self.last_poll > max_interval

    def rejoin_on_next_poll(self) -> None:
        self._rejoin_pending = True
