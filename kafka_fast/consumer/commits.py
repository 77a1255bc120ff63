"""Offset commits of one consumer: stored offsets, auto commit, synchronous and asynchronous
commits and their reports (``on_commit`` runs on the polling thread)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from ..errors import KafkaError, KafkaException
from ..topic_partition import OFFSET_INVALID, TopicPartition
from .fetch_state import FetchState
from .membership import GroupMember
from .offsets import OffsetClient, error_of
from .ownership import armed, owned

E = KafkaError
T = TypeVar("T")
#: commit errors that mean the member must rejoin before its commits count
_MEMBERSHIP = (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS)


def wait_for(fut: Future[T], timeout: float | None, what: str) -> T:
    """``fut``'s result; a time-out raises ``_TIMED_OUT`` naming ``what``."""
    try:
        return fut.result(timeout)
    except FutureTimeout:
        raise KafkaException(KafkaError.of(E._TIMED_OUT, f"{what} timed out")) from None


@owned
class Committer:
    """Commits the offsets stored in the application positions of ``state`` (application
    thread, except the callbacks of commit futures, which only post events)."""

    def __init__(self, state: FetchState, offsets: OffsetClient,
                 member: Callable[[], GroupMember | None], request_timeout_ms: int,
                 auto_commit: bool, auto_commit_interval_ms: int,
                 coordinator_wait_ms: int | None = None) -> None:
        self.state = state
        self.offsets = offsets
        #: the current group member (None outside a group)
        self.member = member
        self.timeout = request_timeout_ms / 1000 * 2
        #: how long a commit waits for a group coordinator (librdkafka: session.timeout.ms)
        self.coordinator_wait = (None if coordinator_wait_ms is None
                                 else coordinator_wait_ms / 1000)
        self.auto_commit = auto_commit
        self.interval = auto_commit_interval_ms / 1000.0
        self.next_auto_commit = time.monotonic() + self.interval
        armed(self)

    def stored_offsets(self, only_changed: bool) -> list[TopicPartition]:
        out = []
        with self.state.lock:
            for (t, p), ps in sorted(self.state.parts.items()):
                if ps.stored < 0 or (only_changed and ps.stored == ps.committed):
                    continue
                out.append(TopicPartition(t, p, ps.stored, ps.stored_metadata,
                                          ps.stored_epoch if ps.stored_epoch >= 0 else None))
        return out

    def note_committed(self, offsets: list[TopicPartition]) -> None:
        """The group committed ``offsets`` (application thread: the committed offsets of the
        application positions follow)."""
        with self.state.lock:
            for tp in offsets:
                app = self.state.parts.get((tp.topic, tp.partition))
                if app is not None and tp.error is None and tp.offset > app.committed:
                    app.committed = tp.offset

    def generation(self) -> tuple[int, str, str | None]:
        g = self.member()
        if g is None:
            return -1, "", None
        return g.generation, g.member_id, g.instance_id

    def send(self, offsets: list[TopicPartition], timeout: float) -> Future:
        """Commit ``offsets`` (the positions' committed offsets follow when the application
        thread sees the result)."""
        fut = self.offsets.commit(offsets, self.generation, timeout, self.coordinator_wait)

        def done(f: Future) -> None:
            if f.exception() is None:
                return
            err = error_of(f.exception() or Exception("no exception"))
            group = self.member()
            if err.code() in _MEMBERSHIP and group is not None:
                self.offsets.client.call_soon(
                    lambda: group.handle_group_error(err.code(), "OffsetCommit"))

        fut.add_done_callback(done)
        return fut

    def commit_async(self, offsets: list[TopicPartition]) -> None:
        """Commit in the background; the outcome reaches ``on_commit`` from a later poll."""
        fut = self.send(offsets, self.timeout)

        def report(f: Future) -> None:
            exc = f.exception()
            if exc is None:
                self.state.post(("commit", None, f.result()))
            else:
                err = error_of(exc)
                self.state.post(("commit", err, [
                    TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata,
                                   tp.leader_epoch, err) for tp in offsets]))

        fut.add_done_callback(report)

    def report(self, err: KafkaError, offsets: list[TopicPartition]) -> None:
        """Report a commit that failed before it was sent to ``on_commit`` (next poll)."""
        self.state.post(("commit", err, [
            TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch)
            for tp in offsets]))

    def commit_sync(self, offsets: list[TopicPartition]) -> list[TopicPartition]:
        """Commit and wait; raises ``KafkaException`` (reported to ``on_commit`` as well)."""
        try:
            result = wait_for(self.send(offsets, self.timeout), None, "commit")
        except KafkaException as exc:
            self.state.post(("commit", exc.args[0], offsets, "raised"))
            raise
        self.note_committed(result)
        self.state.post(("commit", None, result))
        return result

    def auto_commit_if_due(self) -> None:
        if self.auto_commit and time.monotonic() >= self.next_auto_commit:
            self.next_auto_commit = time.monotonic() + self.interval
            offsets = self.stored_offsets(only_changed=True)
            if offsets:
                self.commit_async(offsets)

    def commit_before_revoke(self) -> None:
        """With auto commit, commit what changed and wait (errors go to ``on_commit``)."""
        if not self.auto_commit:
            return
        offsets = self.stored_offsets(only_changed=True)
        if not offsets:
            return
        try:
            result = self.send(offsets, 10.0).result(15.0)
            self.note_committed(result)
            self.state.post(("commit", None, result))
        except Exception as exc:  # reported through on_commit
            err = error_of(exc) if not isinstance(exc, FutureTimeout) else \
                KafkaError.of(E._TIMED_OUT, "commit timed out")
            self.state.post(("commit", err, offsets))

    def committed(self, partitions: list[TopicPartition],
                  timeout: float | None) -> list[TopicPartition]:
        """The group's committed offsets for ``partitions`` (OFFSET_INVALID where none; a
        partition the broker refused has its ``error`` set, as in confluent-kafka)."""
        fut = self.offsets.fetch_committed([(tp.topic, tp.partition) for tp in partitions],
                                           timeout if timeout is not None else 30.0,
                                           partition_errors=True)
        found = wait_for(fut, timeout, "committed()")
        out = []
        for tp in partitions:
            value = found.get((tp.topic, tp.partition), (-1, None, -1))
            if isinstance(value, KafkaError):
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID, error=value))
                continue
            offset, metadata, epoch = value
            out.append(TopicPartition(tp.topic, tp.partition,
                                      offset if offset >= 0 else OFFSET_INVALID,
                                      metadata or None, epoch if epoch >= 0 else None))
        return out
