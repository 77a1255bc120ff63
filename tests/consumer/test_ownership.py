"""Every field of consumer state has one writing thread.

The owner check (``kafka_fast.consumer.ownership``, on with KAFKA_FAST_CHECK_OWNERS=1 or inside
``checking()``) records the thread that writes each field of each application position,
fetch cursor, delivery cursor, committer, fetcher, group member (classic and KIP-848) and poll
watch, and fails on a second writer. Here it watches a consumer on Apache Kafka through seeks,
a pause and resume, synchronous commits, a classic group rebalancing between two members (join
and leave) and a restart of the broker, then a KIP-848 group going from one member to two and
back, then asyncio consumers (each drives its consumer from one thread), while every record
read and every position is checked exactly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import threading
import time
from collections.abc import Callable

import pytest
from consumer_support import produce_confluent
from harness.apache_kafka import require_apache_kafka, start_apache_kafka
from harness.topics import create_topic, unique_topic

from kafka_fast import Consumer, TopicPartition
from kafka_fast.aio import AIOConsumer
from kafka_fast.consumer import ownership
from kafka_fast.consumer.state import AppPosition, FetchCursor

pytestmark = [pytest.mark.apache, pytest.mark.timeout(420)]


def test_a_second_writing_thread_is_caught():
    checked_everywhere = ownership.ENABLED
    with ownership.checking() as seen:
        app = AppPosition("t", 0)
        app.position = 5  # the owner: this thread
        failures: list[BaseException] = []

        def write() -> None:
            try:
                app.position = 6
            except ownership.OwnershipError as exc:
                failures.append(exc)

        other = threading.Thread(target=write, name="other-writer")
        other.start()
        other.join()
        assert [str(e) for e in failures] == [
            "AppPosition.position written by thread 'other-writer', owned by "
            f"{threading.current_thread().name!r}"]
        assert seen == [("AppPosition", "position", threading.current_thread().name,
                         "other-writer")]
        cur = FetchCursor(app, 1)
        cur.fetch_offset = 7
        cur.fetch_offset = 8  # the same thread again is fine
        assert len(seen) == 1
    if not checked_everywhere:
        # Outside the block objects are not checked (unless KAFKA_FAST_CHECK_OWNERS=1 is set).
        app2 = AppPosition("t", 1)
        app2.position = 1
        t = threading.Thread(target=lambda: setattr(app2, "position", 2))
        t.start()
        t.join()
        assert app2.position == 2 and ownership.violations == seen
    del ownership.violations[:]  # made on purpose


@pytest.fixture(scope="module")
def restartable_kafka(tmp_path_factory):
    """A single Apache Kafka node of this module's own, free to be restarted."""
    require_apache_kafka()
    cluster = start_apache_kafka(tmp_path_factory.mktemp("owners-kafka"), brokers=1)
    yield cluster
    cluster.discard()


def _items(partitions: dict[int, range], tag: str) -> list[dict]:
    return [{"partition": p, "key": f"k{p}-{i}".encode(), "value": f"{tag}{p}-{i}".encode(),
             "headers": None, "timestamp": 1_700_000_000_000 + i}
            for p, offsets in sorted(partitions.items()) for i in offsets]


def _expect(partitions: dict[int, range], tag: str) -> list[tuple[int, int, bytes]]:
    return [(p, i, f"{tag}{p}-{i}".encode()) for p, offsets in sorted(partitions.items())
            for i in offsets]


def _read(consumers: list[Consumer], count: int, timeout: float = 60.0) -> list[tuple]:
    """``count`` records from ``consumers`` polled in turn, as (partition, offset, value)."""
    got: list[tuple] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for c in consumers:
            for msg in c.consume(500, 0.2):
                err = msg.error()
                assert err is None, err
                got.append((msg.partition(), msg.offset(), msg.value()))
    return sorted(got)


def _positions(c: Consumer, topic: str, partitions: list[int]) -> list[int]:
    return [tp.offset for tp in c.position([TopicPartition(topic, p) for p in partitions])]


def _wait_assigned(consumers: list[Consumer], wanted: list[int], timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            assert c.poll(0.1) is None
        if [len(c.assignment()) for c in consumers] == wanted:
            return
    raise AssertionError(f"assignments {[c.assignment() for c in consumers]}, "
                         f"wanted sizes {wanted}")


def _both_read(kafka, topic: str, members: list[Consumer], at: int, count: int, tag: str,
               timeout: float = 60.0) -> int:
    """``count`` new records on each of the two partitions, read exactly by ``members`` (one
    partition each), positions checked and committed; returns the offset after them."""
    step = {0: range(at, at + count), 1: range(at, at + count)}
    produce_confluent(kafka, topic, _items(step, tag))
    assert _read(members, 2 * count, timeout) == _expect(step, tag)
    _wait_assigned(members, [1, 1])
    owner = {tp.partition: c for c in members for tp in c.assignment()}
    for p in (0, 1):
        assert _positions(owner[p], topic, [p]) == [at + count]
    for c in members:
        c.commit(asynchronous=False)
    return at + count


def _second_member_joins_then_leaves(kafka, topic: str, conf: dict, c1: Consumer, at: int,
                                     meanwhile: Callable[[Consumer, Consumer, int], int]
                                     | None = None) -> int:
    """A second member joins ``c1``'s group (one partition each, from the committed offset
    ``at``) and both read 10 records of their partition; ``meanwhile(c1, c2, at)`` runs and
    returns the next offset; the second member leaves and ``c1``, given back its partition,
    reads 5 more of each. Returns the offset after them."""
    c2 = Consumer(conf)
    try:
        c2.subscribe([topic])
        _wait_assigned([c1, c2], [1, 1])
        at = _both_read(kafka, topic, [c1, c2], at, 10, "join")
        if meanwhile is not None:
            at = meanwhile(c1, c2, at)
    finally:
        c2.close()
    _wait_assigned([c1], [2])
    last = {0: range(at, at + 5), 1: range(at, at + 5)}
    produce_confluent(kafka, topic, _items(last, "leave"))
    assert _read([c1], 10) == _expect(last, "leave")
    assert _positions(c1, topic, [0, 1]) == [at + 5, at + 5]
    return at + 5


def test_one_writer_per_field_through_seeks_pauses_rebalances_and_a_restart(restartable_kafka):
    kafka = restartable_kafka
    topic = unique_topic("owners")
    create_topic(kafka, topic, 2)
    both = {0: range(0, 100), 1: range(0, 100)}
    produce_confluent(kafka, topic, _items(both, "a"))
    group = unique_topic("owners-g")
    conf = kafka.client_config({"group.id": group, "auto.offset.reset": "earliest",
                                "enable.auto.commit": False, "session.timeout.ms": 30000,
                                "heartbeat.interval.ms": 1000, "fetch.wait.max.ms": 100,
                                "enable.partition.eof": False})
    with ownership.checking() as seen:
        c1 = Consumer(conf)
        try:
            c1.subscribe([topic])
            assert _read([c1], 200) == _expect(both, "a")
            assert _positions(c1, topic, [0, 1]) == [100, 100]

            # Seek back on partition 0: exactly the records from there, nothing fetched
            # before the seek.
            c1.seek(TopicPartition(topic, 0, 10))
            assert _read([c1], 90) == _expect({0: range(10, 100)}, "a")
            assert c1.poll(0.5) is None
            assert _positions(c1, topic, [0, 1]) == [100, 100]

            # Pause partition 1: new records of partition 0 only, then the rest on resume.
            c1.pause([TopicPartition(topic, 1)])
            more = {0: range(100, 120), 1: range(100, 120)}
            produce_confluent(kafka, topic, _items(more, "b"))
            assert _read([c1], 20) == _expect({0: more[0]}, "b")
            assert c1.poll(1.0) is None
            assert _positions(c1, topic, [0, 1]) == [120, 100]
            c1.resume([TopicPartition(topic, 1)])
            assert _read([c1], 20) == _expect({1: more[1]}, "b")
            assert _positions(c1, topic, [0, 1]) == [120, 120]
            committed = c1.commit(asynchronous=False)
            assert [(tp.partition, tp.offset) for tp in committed] == [(0, 120), (1, 120)]

            # A second member joins and reads; the broker restarts meanwhile and the members
            # carry on from where they were (or, if the group rebalanced meanwhile, from the
            # committed offsets: the same); the second member leaves.
            def restart(c1: Consumer, c2: Consumer, at: int) -> int:
                node = next(iter(kafka.nodes))
                kafka.stop_node(node, signal.SIGTERM)
                kafka.start_node(node)
                return _both_read(kafka, topic, [c1, c2], at, 10, "d", timeout=120.0)

            assert _second_member_joins_then_leaves(kafka, topic, conf, c1, 120,
                                                    restart) == 145
            c1.commit(asynchronous=False)
            assert [tp.offset for tp in c1.committed(
                [TopicPartition(topic, p) for p in (0, 1)], timeout=30)] == [145, 145]
        finally:
            c1.close()
        assert seen == []
        # What was watched: the positions and cursors of every assignment (2 partitions, then
        # 1 + 1 across the members, then 2 again, at least), both consumers' delivery and
        # commits.
        assert ownership.watched["AppPosition"] >= 6 and ownership.watched["FetchCursor"] >= 6
        assert ownership.watched["Delivery"] == ownership.watched["Committer"] == 2
        assert ownership.watched["Fetcher"] == ownership.watched["ClassicGroup"] == 2
        assert ownership.watched["PollWatch"] == 2


def test_one_writer_per_field_through_a_kip848_group_of_one_two_and_one(restartable_kafka):
    kafka = restartable_kafka
    topic = unique_topic("owners848")
    create_topic(kafka, topic, 2)
    first = {0: range(0, 50), 1: range(0, 50)}
    produce_confluent(kafka, topic, _items(first, "a"))
    conf = kafka.client_config({"group.id": unique_topic("owners848-g"),
                                "group.protocol": "consumer", "auto.offset.reset": "earliest",
                                "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                                "enable.partition.eof": False})
    with ownership.checking() as seen:
        c1 = Consumer(conf)
        try:
            c1.subscribe([topic])
            assert _read([c1], 100) == _expect(first, "a")
            assert _positions(c1, topic, [0, 1]) == [50, 50]
            c1.commit(asynchronous=False)

            # A second member: the coordinator moves one partition to it (revoked from the
            # first, assigned to the second from the committed offset); when it leaves, the
            # first gets its partition back.
            assert _second_member_joins_then_leaves(kafka, topic, conf, c1, 50) == 65
        finally:
            c1.close()
        assert seen == []
        assert ownership.watched["ConsumerGroupMember"] == ownership.watched["PollWatch"] == 2
        assert ownership.watched["Fetcher"] == 2 and ownership.watched["FetchCursor"] >= 4


async def _aread(consumer: AIOConsumer, count: int, timeout: float = 60.0) -> list[tuple]:
    """``count`` records from an ``AIOConsumer`` through its three reads in turn, as
    (partition, offset, value)."""
    reads = [lambda: consumer.consume(30, 0.5), lambda: consumer.poll(0.5),
             lambda: consumer.consume_batch(30, 0.5)]
    got: list[tuple] = []
    deadline = time.monotonic() + timeout
    turn = 0
    while len(got) < count and time.monotonic() < deadline:
        result = await reads[turn % 3]()
        turn += 1
        msgs = [] if result is None else [result] if turn % 3 == 2 else list(result)
        for msg in msgs:
            assert msg.error() is None, msg.error()
            got.append((msg.partition(), msg.offset(), msg.value()))
    return sorted(got)


def test_one_writer_per_field_under_asyncio_consumers(restartable_kafka):
    """AIOConsumer runs its consumer's calls on one thread (its own, or one of a given
    executor's): reads of each kind, a cancelled read, a seek, a pause, commits and a
    rebalance callback calling back into the consumer leave one writer per field."""
    kafka = restartable_kafka
    topic = unique_topic("owners-aio")
    create_topic(kafka, topic, 2)
    first = {0: range(0, 60), 1: range(0, 60)}
    produce_confluent(kafka, topic, _items(first, "a"))
    conf = kafka.client_config({"group.id": unique_topic("owners-aio-g"),
                                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                "session.timeout.ms": 30000, "fetch.wait.max.ms": 100,
                                "enable.partition.eof": False})
    assigned: list[list[int]] = []

    async def on_assign(consumer: AIOConsumer, partitions: list) -> None:
        assigned.append(sorted(p.partition for p in partitions))
        await consumer.assign(partitions)

    async def main() -> None:
        c = AIOConsumer(conf)  # max_workers=2 by default: still one thread
        try:
            await c.subscribe([topic], on_assign=on_assign)
            assert await _aread(c, 120) == _expect(first, "a")
            await c.seek(TopicPartition(topic, 1, 40))
            assert await _aread(c, 20) == _expect({1: range(40, 60)}, "a")
            await c.pause([TopicPartition(topic, 0)])
            more = {0: range(60, 70), 1: range(60, 70)}
            produce_confluent(kafka, topic, _items(more, "b"))
            assert await _aread(c, 10) == _expect({1: more[1]}, "b")
            # A read cancelled while it waits (nothing to read: partition 0 is paused): its
            # worker call ends within a slice and the next call adopts it.
            task = asyncio.ensure_future(c.consume(100, 10))
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await c.resume([TopicPartition(topic, 0)])
            assert await _aread(c, 10) == _expect({0: more[0]}, "b")
            committed = await c.commit(asynchronous=False)
            assert [(tp.partition, tp.offset) for tp in committed] == [(0, 70), (1, 70)]
        finally:
            await c.close()
        # The next member of the group runs on one thread of the application's executor and
        # resumes at the commits.
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=3)
        try:
            c = AIOConsumer(conf, executor=pool)
            try:
                await c.subscribe([topic])
                last = {0: range(70, 75), 1: range(70, 75)}
                produce_confluent(kafka, topic, _items(last, "c"))
                assert await _aread(c, 10) == _expect(last, "c")
                assert [tp.offset for tp in await c.position(
                    [TopicPartition(topic, p) for p in (0, 1)])] == [75, 75]
            finally:
                await c.close()
        finally:
            pool.shutdown()

    with ownership.checking() as seen:
        asyncio.run(main())
        assert seen == []
        assert assigned == [[0, 1]]
        assert ownership.watched["Delivery"] == ownership.watched["Committer"] == 2
        assert ownership.watched["ClassicGroup"] == ownership.watched["Fetcher"] == 2
