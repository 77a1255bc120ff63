"""Fetch-position validation after a leader change (leader epochs, KIP-320).

When metadata reports a newer leader epoch for a partition whose fetch position carries an
epoch, fetching pauses until the new leader confirms the position with OffsetForLeaderEpoch:
it answers with the end offset of that epoch in its own log. An end offset below the fetch
position means the log was truncated (say, after an unclean leader election):

- if only records fetched ahead of the application were removed, fetching restarts at the
  application's position and nothing it has seen changes;
- if records the application already received were removed, a ``_LOG_TRUNCATION`` error
  names them and consuming resumes at the end offset (with ``auto.offset.reset=error`` the
  partition stops until the application seeks).

Requests and answers are handled on the client's I/O thread; a position that must move is
decided on the application's thread (at its next poll), which knows the position it has
reached and drops the fetched but undelivered records; the fetch cursor follows through a
command the fetcher applies on the I/O thread.
"""

from __future__ import annotations

import time
from collections import defaultdict
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING

from ..errors import KafkaError, KafkaException
from ..protocol import messages as m
from ..protocol.versioned import versioned
from .fetch_state import FetchState
from .offsets import LEADER_ERRORS, TRANSIENT_LOCAL, error_of
from .state import NEED_NONE, NEED_VALIDATE, AppPosition, FetchCursor

if TYPE_CHECKING:
    from ..net import KafkaClient

E = KafkaError
API_KEY = m.OffsetForLeaderEpochRequest.API_KEY
#: v2 is the first version carrying CurrentLeaderEpoch (v3 adds ReplicaId, -1 for a consumer).
MIN_VERSION = 2


def offset_for_leader_epoch_request(wanted: dict[tuple[str, int], tuple[int, int]]):
    """The request asking for the end offset of each ``{(topic, partition): (current leader
    epoch, epoch to look up)}``."""
    R = m.OffsetForLeaderEpochRequest
    topics: dict[str, list] = defaultdict(list)
    for (topic, partition), (current, epoch) in wanted.items():
        topics[topic].append(R.OffsetForLeaderTopic.OffsetForLeaderPartition(
            partition=partition, current_leader_epoch=current, leader_epoch=epoch))
    return R(replica_id=-1, topics=[R.OffsetForLeaderTopic(topic=t, partitions=ps)
                                    for t, ps in topics.items()])


class Validator:
    """Sends the validations the fetcher asks for and applies their answers."""

    def __init__(self, state: FetchState, client: KafkaClient, reset_strategy: int | None,
                 error_backoff: float) -> None:
        self.state = state
        self.client = client
        #: auto.offset.reset (OFFSET_BEGINNING / OFFSET_END), None for ``error``
        self.reset_strategy = reset_strategy
        self.error_backoff = error_backoff

    def start(self, parts: list[FetchCursor]) -> None:
        """Validate the fetch positions of ``parts`` (each marked ``NEED_VALIDATE``)."""
        state = self.state
        view = self.client.cluster
        by_node: dict[int, dict] = defaultdict(dict)
        unknown = set()
        now = time.monotonic()
        with state.lock:
            for ps in parts:
                if ps.need != NEED_VALIDATE or ps.resolving:
                    continue
                node = view.leader(ps.topic, ps.partition)
                if node is None:
                    unknown.add(ps.topic)
                    ps.backoff_until = now + self.error_backoff
                    continue
                if not self.client.node_ready(node):
                    continue
                current = view.leader_epoch(ps.topic, ps.partition)
                version = self.client.api_version(node, API_KEY)
                if version is None or version < MIN_VERSION or current < 0:
                    # The leader cannot tell: fetch on, as clients without validation do.
                    ps.need = NEED_NONE
                    ps.known_leader_epoch = current
                    continue
                ps.resolving = True
                by_node[node][(ps.topic, ps.partition)] = (ps, ps.version, ps.fetch_offset,
                                                           current)
        if unknown:
            self.client.request_metadata(sorted(unknown))
        for node, entries in by_node.items():
            wanted = {tp: (e[3], e[0].fetch_epoch) for tp, e in entries.items()}
            try:
                fut = self.client.send(node, versioned(
                    m.OffsetForLeaderEpochRequest,
                    partial(offset_for_leader_epoch_request, wanted)))
            except KafkaException as exc:
                fut = Future()
                fut.set_exception(exc)
            fut.add_done_callback(lambda f, entries=entries: self.on_answer(entries, f))
        self.client.wakeup()

    def on_answer(self, entries: dict, fut: Future) -> None:
        """Apply the OffsetForLeaderEpoch answer ``fut`` for ``entries`` ({(topic, partition):
        (cursor, version, fetch offset, current leader epoch)})."""
        state = self.state
        now = time.monotonic()
        backoff = now + self.error_backoff
        exc = fut.exception()
        refresh = set()
        errors: list[KafkaError] = []
        moves = []
        answers = {}
        if exc is None:
            for topic in fut.result().topics:
                for p in topic.partitions:
                    answers[(topic.topic, p.partition)] = p
        else:
            err = error_of(exc)
            if err.code() not in TRANSIENT_LOCAL and not err.retriable():
                state.post_error(KafkaError.of(err.code(), f"Validating fetch positions failed: "
                                                     f"{err.str()}"))
        with state.lock:
            for tp, (ps, version, fetch_offset, current) in entries.items():
                if ps.version != version or ps.need != NEED_VALIDATE:
                    ps.resolving = False
                    continue
                answer = answers.get(tp)
                if answer is not None and not answer.error_code and \
                        answer.end_offset < fetch_offset:
                    # Truncated (or unknown epoch): moved at the application's next poll.
                    moves.append(partial(self._move, ps.app, ps.gen, fetch_offset,
                                         ps.fetch_epoch, current, answer.end_offset,
                                         answer.leader_epoch))
                    continue
                ps.resolving = False
                if answer is None:
                    ps.backoff_until = backoff
                    refresh.add(ps.topic)
                elif answer.error_code:
                    ps.backoff_until = backoff
                    if answer.error_code in LEADER_ERRORS:
                        refresh.add(ps.topic)
                    elif not ps.error_reported:
                        ps.error_reported = True
                        errors.append(KafkaError.of(
                            answer.error_code, f"Validating {ps.topic} [{ps.partition}] at "
                            f"offset {fetch_offset}: {KafkaError.of(answer.error_code)}"))
                else:
                    ps.need = NEED_NONE
                    ps.known_leader_epoch = current
        for err in errors:
            state.post_error(err)
        for move in moves:
            state.post(("call", move))
        if refresh:
            self.client.request_metadata(sorted(refresh))
        self.client.wakeup()

    def _move(self, app: AppPosition, gen: int, fetch_offset: int, fetch_epoch: int,
              current: int, end_offset: int, end_epoch: int) -> KafkaError | None:
        """Move ``app`` after the leader answered ``end_offset`` below ``fetch_offset``
        (application thread); returns the error to hand out, if any. The fetcher learns the
        outcome through a "truncated" command."""
        state = self.state
        with state.lock:
            if app.gen != gen or not state.current(app):
                # Sought or unassigned since: only the validation is over.
                state.command(("truncated", app, gen, None, -1, -1, current, False))
                err = None
            else:
                err = self._apply(app, fetch_offset, fetch_epoch, current, end_offset,
                                  end_epoch)
        self.client.wakeup()
        return err

    def _apply(self, app: AppPosition, fetch_offset: int, fetch_epoch: int, current: int,
               end_offset: int, end_epoch: int) -> KafkaError | None:
        """Drop what was fetched ahead of ``app``, move it and tell the fetcher (state lock
        held)."""
        state = self.state
        where = f"{app.topic} [{app.partition}]"
        stop = self.reset_strategy is None
        state.drop_buffered(app)
        if end_offset < 0 or end_epoch < 0:
            # The leader holds nothing of that epoch (or before it): the position is gone.
            state.command(("truncated", app, app.moved(None), "reset", -1, -1, current, stop))
            return self._stopped(f"{where}: the leader (epoch {current}) has no records "
                                 f"of leader epoch {fetch_epoch}; offset {fetch_offset} "
                                 f"cannot be trusted")
        if app.position < 0:
            # Nothing handed out yet (a found position is applied by drop_buffered, so this
            # does not happen): go on where the leader's log diverged.
            state.command(("truncated", app, app.moved(end_offset, end_epoch), "fetch",
                           end_offset, end_epoch, current, False))
            return None
        if app.position <= end_offset:
            # Only records fetched ahead of the application were truncated: fetch them again.
            position, epoch = app.position, app.leader_epoch
            state.command(("truncated", app, app.moved(position, epoch), "fetch", position,
                           epoch, current, False))
            return None
        lost = (f"the records at offsets {end_offset}..{app.position - 1}, before the "
                f"consumer's position, are not in the leader's log")
        if stop:
            state.command(("truncated", app, app.moved(None), "reset", -1, -1, current, True))
            return self._stopped(f"{where}: log truncated at offset {end_offset} (leader "
                                 f"epoch {end_epoch}): {lost}")
        state.command(("truncated", app, app.moved(end_offset, end_epoch), "fetch", end_offset,
                       end_epoch, current, False))
        return KafkaError.of(
            E._LOG_TRUNCATION, f"{where}: log truncated at offset {end_offset} (leader epoch "
            f"{end_epoch}): {lost}; consuming resumes at offset {end_offset}")

    def _stopped(self, reason: str) -> KafkaError:
        """The error for a position sent to ``auto.offset.reset``; with ``error`` the
        partition stops (reported once) until the application seeks."""
        if self.reset_strategy is None:
            return KafkaError.of(E._LOG_TRUNCATION, f"{reason}; auto.offset.reset=error: seek() "
                                                 f"to go on")
        return KafkaError.of(E._LOG_TRUNCATION, f"{reason}; resetting to auto.offset.reset")
