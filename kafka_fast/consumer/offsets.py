"""Offset requests: ListOffsets (to partition leaders), OffsetFetch and OffsetCommit (to the
group coordinator), each retried on the I/O thread until it succeeds, fails for good, or its
deadline passes.

Every call returns a ``concurrent.futures.Future``. Retriable errors follow the error table of
the client design: NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH / UNKNOWN_TOPIC_OR_PART refresh
metadata then retry; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE find the coordinator again;
COORDINATOR_LOAD_IN_PROGRESS backs off without re-discovery.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from ..errors import KafkaError, KafkaException
from ..net.lanes import Lane
from ..protocol import messages as m
from ..protocol.versioned import versioned
from ..topic_partition import TopicPartition

E = KafkaError
LEADER_ERRORS = frozenset({
    E.NOT_LEADER_OR_FOLLOWER, E.LEADER_NOT_AVAILABLE, E.FENCED_LEADER_EPOCH,
    E.UNKNOWN_LEADER_EPOCH, E.UNKNOWN_TOPIC_OR_PART, E.OFFSET_NOT_AVAILABLE,
    E.REPLICA_NOT_AVAILABLE, E.KAFKA_STORAGE_ERROR, E.REQUEST_TIMED_OUT,
})
REDISCOVER = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
BACKOFF = frozenset({E.COORDINATOR_LOAD_IN_PROGRESS, E.REQUEST_TIMED_OUT,
                     E.STALE_MEMBER_EPOCH})
TRANSIENT_LOCAL = frozenset({E._TRANSPORT, E._TIMED_OUT, E._ALL_BROKERS_DOWN,
                             E._UNKNOWN_BROKER, E._WAIT_COORD})

GROUP = 0


def error_of(exc: BaseException) -> KafkaError:
    """The KafkaError carried by ``exc`` (or a _FAIL error describing it)."""
    if isinstance(exc, KafkaException):
        return exc.args[0]
    return KafkaError.of(E._FAIL, f"{type(exc).__name__}: {exc}")


def _refused_topic(view: Any, tps: list[tuple[str, int]]) -> KafkaError | None:
    """The first error the cluster's metadata (``view``) gives for one of ``tps``' topics
    that retrying cannot clear (TOPIC_AUTHORIZATION_FAILED, ...), else None."""
    for topic in sorted({t for t, _ in tps}):
        info = view.topics.get(topic) if view is not None else None
        err = info.error if info is not None else None
        if err is not None and not err.retriable():
            return KafkaError.of(err.code(), f"topic {topic}: {err.str()}")
    return None


class _Retry:
    """Deadline and exponential backoff of one logical request."""

    def __init__(self, client: Any, timeout: float) -> None:
        self.client = client
        self.deadline = time.monotonic() + timeout
        conf = client.config
        self.delay = conf["retry.backoff.ms"] / 1000.0
        self.max_delay = conf["retry.backoff.max.ms"] / 1000.0

    def later(self, fn) -> bool:
        """Schedule ``fn`` after the next backoff; False when the deadline has passed."""
        now = time.monotonic()
        if now >= self.deadline:
            return False
        delay = min(self.delay, self.deadline - now)
        self.delay = min(self.delay * 2, self.max_delay)
        self.client.call_later(delay, fn)
        return True

    def remaining_ms(self) -> int:
        return max(1, int((self.deadline - time.monotonic()) * 1000))


def _list_offsets_request(topics: dict[str, list], isolation_level: int,
                          timeout_ms: Callable[[], int]) -> m.ListOffsetsRequest:
    return m.ListOffsetsRequest(
        replica_id=-1, isolation_level=isolation_level,
        topics=[m.ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps)
                for t, ps in topics.items()],
        timeout_ms=timeout_ms())


class _Pending:
    """Partitions a look-up still waits for, and the last retriable error seen."""

    __slots__ = ("pending", "last")

    def __init__(self, pending: dict[tuple[str, int], int]) -> None:
        self.pending = pending
        self.last: KafkaError | None = None


class OffsetClient:
    """Offset look-ups and commits for one consumer (``group_id`` may be empty)."""

    def __init__(self, client: Any, group_id: str) -> None:
        self.client = client
        self.group_id = group_id

    # -- ListOffsets ---------------------------------------------------------------------------
    def list_offsets(self, wanted: dict[tuple[str, int], int], timeout: float,
                     isolation_level: int = 1) -> Future:
        """Offsets for ``{(topic, partition): timestamp}`` (-2 earliest, -1 latest, else the
        first offset with a timestamp >= the given one). Resolves to ``{tp: (offset,
        leader_epoch, timestamp)}``; offset -1 means no such record."""
        fut: Future = Future()
        results: dict[tuple[str, int], tuple[int, int, int]] = {}
        retry = _Retry(self.client, timeout)
        state = _Pending(dict(wanted))

        def attempt() -> None:
            if fut.done():
                return
            pending = state.pending
            by_leader: dict[int, list[tuple[str, int]]] = defaultdict(list)
            unknown = []
            for tp in pending:
                node = self.client.leader(*tp)
                if node is None:
                    unknown.append(tp)
                else:
                    by_leader[node].append(tp)
            if unknown:
                refused = _refused_topic(self.client.cluster, unknown)
                if refused is not None:  # e.g. TOPIC_AUTHORIZATION_FAILED: no retry helps
                    finish_error(refused)
                    return
                self.client.request_metadata(sorted({t for t, _ in unknown}))
                if not by_leader:
                    again(KafkaError.of(E.LEADER_NOT_AVAILABLE,
                                     f"no leader known for {sorted(unknown)}"))
                    return
            outstanding = {"n": len(by_leader), "retry": bool(unknown)}
            for node, tps in by_leader.items():
                topics: dict[str, list] = defaultdict(list)
                for t, p in tps:
                    topics[t].append(m.ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=p, timestamp=pending[(t, p)]))
                req = versioned(m.ListOffsetsRequest, partial(
                    _list_offsets_request, topics, isolation_level, retry.remaining_ms))
                f = self.client.send(node, req)
                f.add_done_callback(lambda f, tps=tps: on_response(f, tps, outstanding))

        def on_response(f: Future, tps, outstanding) -> None:
            exc = f.exception()
            if exc is not None:
                err = error_of(exc)
                if err.code() in TRANSIENT_LOCAL or err.retriable():
                    outstanding["retry"] = True
                    state.last = err
                    self.client.request_metadata(sorted({t for t, _ in tps}))
                else:
                    finish_error(err)
                    return
            else:
                resp = f.result()
                for topic in resp.topics:
                    for p in topic.partitions:
                        tp = (topic.name, p.partition_index)
                        if tp not in state.pending:
                            continue
                        code = p.error_code
                        if code == 0:
                            results[tp] = (p.offset, p.leader_epoch, p.timestamp)
                            del state.pending[tp]
                        elif code in LEADER_ERRORS:
                            outstanding["retry"] = True
                            state.last = KafkaError.of(code)
                            self.client.request_metadata([topic.name])
                        else:
                            finish_error(KafkaError.of(
                                code, f"ListOffsets for {tp[0]} [{tp[1]}]: {KafkaError.of(code)}"))
                            return
            outstanding["n"] -= 1
            if outstanding["n"] == 0:
                if not state.pending:
                    fut.set_result(results)
                elif outstanding["retry"]:
                    again(state.last)
                else:
                    again(KafkaError.of(E._FAIL, "partitions missing from ListOffsets response"))

        def again(err: KafkaError | None) -> None:
            if not retry.later(attempt):
                finish_error(KafkaError.of(E._TIMED_OUT,
                                        f"ListOffsets timed out ({err.str() if err else ''})"))

        def finish_error(err: KafkaError) -> None:
            if not fut.done():
                fut.set_exception(KafkaException(err))

        if not wanted:
            fut.set_result({})
        else:
            self.client.call_soon(attempt)
        return fut

    # -- coordinator requests -----------------------------------------------------------------
    def coordinator_call(self, build, handle, timeout: float,
                         coordinator_wait: float | None = None) -> Future:
        """Send ``build()`` to the group coordinator; ``handle(resp)`` returns the result or
        raises KafkaException. Coordinator moves and loading are retried until ``timeout``.
        With ``coordinator_wait``, a coordinator not found within that many seconds fails the
        call with ``_WAIT_COORD`` (librdkafka's commits wait ``session.timeout.ms``)."""
        fut: Future = Future()
        retry = _Retry(self.client, timeout)
        last: list[KafkaError | None] = [None]
        found = [False]

        def attempt() -> None:
            if fut.done():
                return
            cf = self.client.coordinator(GROUP, self.group_id)
            cf.add_done_callback(on_coordinator)

        def give_up_waiting(wait: float) -> None:
            if not found[0]:
                why = f" (last error: {last[0].str()})" if last[0] is not None else ""
                fail(KafkaError.of(E._WAIT_COORD, f"Waiting for coordinator: none found within "
                                               f"{wait * 1000:.0f} ms{why}"))

        def on_coordinator(cf: Future) -> None:
            exc = cf.exception()
            if exc is not None:
                err = error_of(exc)
                return again(err) if (err.retriable() or err.code() in TRANSIENT_LOCAL) \
                    else fail(err)
            found[0] = True
            node = cf.result()
            f = self.client.send(node, build(), lane=Lane.COORDINATOR)
            f.add_done_callback(on_response)

        def on_response(f: Future) -> None:
            exc = f.exception()
            if exc is not None:
                err = error_of(exc)
                if err.code() in TRANSIENT_LOCAL:
                    self.client.invalidate_coordinator(GROUP, self.group_id)
                    return again(err)
                return fail(err)
            try:
                result = handle(f.result())
            except KafkaException as exc2:
                err = exc2.args[0]
                if err.code() in REDISCOVER:
                    self.client.invalidate_coordinator(GROUP, self.group_id)
                    return again(err)
                if err.code() in BACKOFF:
                    return again(err)
                return fail(err)
            if not fut.done():
                fut.set_result(result)

        def again(err: KafkaError) -> None:
            last[0] = err
            if not retry.later(attempt):
                fail(KafkaError.of(E._TIMED_OUT, f"timed out waiting for the group coordinator "
                                              f"(last error: {err.str()})"))

        def fail(err: KafkaError) -> None:
            if not fut.done():
                fut.set_exception(KafkaException(err))

        self.client.call_soon(attempt)
        if coordinator_wait is not None and coordinator_wait < timeout:
            wait: float = coordinator_wait
            self.client.call_later(wait, lambda: give_up_waiting(wait))
        return fut

    def fetch_committed(self, tps: list[tuple[str, int]], timeout: float,
                        require_stable: bool = True, partition_errors: bool = False) -> Future:
        """Committed offsets: ``{tp: (offset, metadata, leader_epoch)}`` (offset -1: none).
        A partition's error fails the Future, or with ``partition_errors`` is that
        partition's value (a KafkaError, e.g. TOPIC_AUTHORIZATION_FAILED)."""
        topics: dict[str, list[int]] = defaultdict(list)
        for t, p in tps:
            topics[t].append(p)

        def make():
            return m.OffsetFetchRequest(
                group_id=self.group_id,
                topics=[m.OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=ps)
                        for t, ps in topics.items()],
                groups=[m.OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id=self.group_id,
                    topics=[m.OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                        name=t, partition_indexes=ps) for t, ps in topics.items()])],
                require_stable=require_stable)

        def build():
            return versioned(m.OffsetFetchRequest, make)

        def handle(resp):
            out = {}
            if resp.groups:
                group = resp.groups[0]
                if group.error_code:
                    raise KafkaException(KafkaError.of(group.error_code))
                topic_list = group.topics
            else:
                if resp.error_code:
                    raise KafkaException(KafkaError.of(resp.error_code))
                topic_list = resp.topics
            for topic in topic_list:
                for p in topic.partitions:
                    if p.error_code:
                        if p.error_code == E.UNSTABLE_OFFSET_COMMIT:
                            raise KafkaException(KafkaError.of(
                                E.COORDINATOR_LOAD_IN_PROGRESS, "unstable offset commit"))
                        if not partition_errors:
                            raise KafkaException(KafkaError.of(p.error_code))
                        out[(topic.name, p.partition_index)] = KafkaError.of(p.error_code)
                        continue
                    out[(topic.name, p.partition_index)] = (
                        p.committed_offset, p.metadata, p.committed_leader_epoch)
            return out

        return self.coordinator_call(build, handle, timeout)

    def commit(self, offsets: list[TopicPartition], identity, timeout: float,
               coordinator_wait: float | None = None) -> Future:
        """OffsetCommit; resolves to the TopicPartition list with per-partition ``error`` set,
        or fails with the first group-level or partition-level error (``_WAIT_COORD`` when no
        coordinator is found within ``coordinator_wait`` seconds).

        ``identity()`` gives ``(generation or member epoch, member id, group instance id)``
        and is asked again for every attempt (STALE_MEMBER_EPOCH is retried with the epoch
        the next heartbeat brings)."""
        topics: dict[str, list[TopicPartition]] = defaultdict(list)
        for tp in offsets:
            topics[tp.topic].append(tp)

        def make():
            R = m.OffsetCommitRequest
            generation, member_id, group_instance_id = identity()
            return R(
                group_id=self.group_id, generation_id_or_member_epoch=generation,
                member_id=member_id, group_instance_id=group_instance_id or None,
                topics=[R.OffsetCommitRequestTopic(name=t, partitions=[
                    R.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=tp.partition, committed_offset=tp.offset,
                        committed_leader_epoch=(tp.leader_epoch if tp.leader_epoch is not None
                                                else -1),
                        committed_metadata=tp.metadata or "")
                    for tp in tps]) for t, tps in topics.items()])

        def build():
            return versioned(m.OffsetCommitRequest, make)

        def handle(resp):
            errors = {}
            first = None
            for topic in resp.topics:
                for p in topic.partitions:
                    if p.error_code:
                        err = KafkaError.of(p.error_code)
                        errors[(topic.name, p.partition_index)] = err
                        if first is None or (first.code() not in REDISCOVER | BACKOFF
                                             and err.code() in REDISCOVER | BACKOFF):
                            first = err
            if first is not None:
                raise KafkaException(first)
            return [TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata,
                                   tp.leader_epoch, errors.get((tp.topic, tp.partition)))
                    for tp in offsets]

        return self.coordinator_call(build, handle, timeout, coordinator_wait)
