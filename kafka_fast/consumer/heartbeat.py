"""A group member that only heartbeats: what the KIP-848 consumer-group member
(``group_kip848``) and the KIP-932 share-group member (``share.membership``) share.

Both send one heartbeat at a time to the group coordinator on the client's I/O thread and
handle its answer the same way:

- no answer: a coordinator that does not serve the API is fatal; a lost connection (or
  another local transport error) finds the coordinator again; then back off;
- NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE: find the coordinator again, after the back-off;
- COORDINATOR_LOAD_IN_PROGRESS: back off;
- UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: the member lost its assignment and joins again
  (``_rejoin``);
- the subclass's ``FATAL`` codes end membership (``_fail``);
- anything else is reported (``_unknown_error``) and the heartbeat retried after at least a
  second;
- an accepted answer sets the member id, member epoch and heartbeat interval, then
  ``_accepted`` takes its assignment.

Every field is written on the I/O thread after construction (``ownership`` checks it).
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError
from .offsets import GROUP, TRANSIENT_LOCAL, error_of
from .ownership import owned

if TYPE_CHECKING:
    from ..net import KafkaClient

E = KafkaError
log = logging.getLogger("kafka_fast.consumer")
REDISCOVER = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
REJOIN = frozenset({E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH})


@owned
class HeartbeatMember:
    """The heartbeat loop and its error handling. A subclass names ``API`` (for messages),
    ``FATAL`` and ``UNSUPPORTED`` (why a coordinator without the API cannot serve it), sends
    the heartbeat in ``_heartbeat(token)`` and says in ``_token``/``_current`` which
    heartbeats are still wanted; it calls ``armed(self)`` at the end of its ``__init__`` (the
    owner check covers every subclass)."""

    API = ""
    #: error codes that end membership
    FATAL: frozenset[int] = frozenset()
    #: the message of the fatal error when the coordinator does not serve ``API``
    UNSUPPORTED = ""

    def __init__(self, client: KafkaClient, group_id: str, member_id: str,
                 heartbeat_interval: float, backoff: float) -> None:
        self.client = client
        self.group_id = group_id
        self.member_id = member_id
        self.member_epoch = 0
        self.heartbeat_interval = heartbeat_interval
        self.backoff = backoff
        self.coordinator: int | None = None
        self.timer: Any = None
        self.inflight = False
        self.fatal: KafkaError | None = None

    # -- what a subclass says -------------------------------------------------------------------
    def _token(self) -> int:
        """What a scheduled heartbeat carries; it is dropped unless ``_current`` of it."""
        raise NotImplementedError

    def _current(self, token: int) -> bool:
        raise NotImplementedError

    def _heartbeat(self, token: int) -> None:
        raise NotImplementedError

    def _accepted(self, resp: Any) -> None:
        """An answer without error (member id, epoch and interval already taken)."""
        raise NotImplementedError

    def _rejoin(self, err: KafkaError) -> None:
        """UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: drop the assignment, join again."""
        raise NotImplementedError

    def _fail(self, err: KafkaError) -> None:
        """Membership ended with ``err``."""
        raise NotImplementedError

    def _fatal_error(self, code: int, err: KafkaError) -> KafkaError:
        """The error a ``FATAL`` code ends membership with."""
        return KafkaError.of(code, err.str(), fatal=True)

    def _unknown_error(self, err: KafkaError) -> None:
        """An error code with no rule of its own: report it, try again later."""
        log.warning("group %s: %s", self.group_id, err.str())

    # -- the loop ---------------------------------------------------------------------------------
    def _schedule(self, delay: float) -> None:
        """Heartbeat in ``delay`` seconds (replacing the one scheduled)."""
        if self.timer is not None:
            self.timer.cancel()
        token = self._token()
        self.timer = self.client.call_later(delay, lambda: self._heartbeat(token))

    def _ready_to_send(self, token: int) -> bool:
        """False (and the next step taken) while a heartbeat is in flight or the coordinator
        is not known."""
        if self.inflight:
            self._schedule(self.heartbeat_interval)
            return False
        if self.coordinator is None:
            self._find_coordinator(token)
            return False
        return True

    def _find_coordinator(self, token: int) -> None:
        f = self.client.coordinator(GROUP, self.group_id)

        def done(f: Future) -> None:
            if not self._current(token):
                return
            if f.exception() is not None:
                self._schedule(self.backoff)
                return
            self.coordinator = f.result()
            self._schedule(0.0)

        f.add_done_callback(done)

    def _forget_coordinator(self) -> None:
        self.client.invalidate_coordinator(GROUP, self.group_id)
        self.coordinator = None

    def _on_heartbeat(self, f: Future, token: int) -> None:
        self.inflight = False
        if not self._current(token):
            return
        exc = f.exception()
        if exc is not None:
            err = error_of(exc)
            if err.code() == E._UNSUPPORTED_FEATURE:
                self._fail(KafkaError.of(E._UNSUPPORTED_FEATURE, self.UNSUPPORTED, fatal=True))
                return
            if err.code() in TRANSIENT_LOCAL:
                self._forget_coordinator()
            self._schedule(self.backoff)
            return
        resp = f.result()
        if resp.error_code:
            self._error(resp.error_code, resp.error_message)
            return
        if resp.member_id:
            self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.heartbeat_interval = resp.heartbeat_interval_ms / 1000.0
        self._accepted(resp)
        self._schedule(self.heartbeat_interval)

    def _error(self, code: int, message: str | None) -> None:
        err = KafkaError.of(code, f"{self.API}: {message or KafkaError.of(code).str()}")
        if code in REDISCOVER:
            self._forget_coordinator()
            self._schedule(self.backoff)
        elif code == E.COORDINATOR_LOAD_IN_PROGRESS:
            self._schedule(self.backoff)
        elif code in REJOIN:
            self._rejoin(err)
        elif code in self.FATAL:
            self._fail(self._fatal_error(code, err))
        else:
            self._unknown_error(err)
            self._schedule(max(self.backoff, 1.0))
