"""The asyncio clients under misuse, on Apache Kafka, side by side with confluent-kafka's where
it says so: a raising on_delivery costs no other record its report, clients dropped without
close() release their threads and sockets, a cancelled read loses no record, close() while a
read is in flight is bounded."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time

import confluent_kafka
import confluent_kafka.aio as confluent_aio
import pytest
from harness.topics import create_topic, unique_topic

import kafka_fast
from kafka_fast.aio import AIOConsumer, AIOProducer

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("cls", [confluent_aio.AIOProducer, AIOProducer],
                         ids=["confluent", "ours"])
def test_a_raising_on_delivery_costs_no_other_record_its_report(kafka, cls):
    topic = unique_topic("aio-cb-raise")
    create_topic(kafka, topic, 1)
    seen: list = []

    def on_delivery(err, msg):
        seen.append((err, msg.offset()))
        if len(seen) == 3:
            raise ValueError("third")

    async def main():
        handled: list = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: handled.append(ctx))
        producer = cls(kafka.client_config({"linger.ms": 50}))
        futures = [await producer.produce(topic, b"%d" % i, on_delivery=on_delivery)
                   for i in range(20)]
        done, pending = await asyncio.wait(futures, timeout=30)
        await producer.close()
        return futures, pending, handled

    futures, pending, handled = asyncio.run(main())
    assert not pending
    assert [(f.result().value(), f.result().offset()) for f in futures] == [
        (b"%d" % i, i) for i in range(20)]
    if cls is AIOProducer:  # confluent's AIOProducer does not call on_delivery here
        assert seen == [(None, i) for i in range(20)]
        assert [type(ctx["exception"]) for ctx in handled] == [ValueError]
        assert "on_delivery" in handled[0]["message"]


def _usage() -> tuple[int, int]:
    return threading.active_count(), len(os.listdir("/proc/self/fd"))


def _settled(base: tuple[int, int], timeout: float = 15.0) -> tuple[int, int]:
    """Threads and open fds once back at ``base`` (or after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        gc.collect()
        now = _usage()
        if (now[0] <= base[0] and now[1] <= base[1]) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def _drop_aio_producers(kafka, topic: str, cls) -> None:
    async def main():
        for i in range(5):
            producer = cls(kafka.client_config())
            msg = await asyncio.wait_for(await producer.produce(topic, b"%d" % i), 30)
            assert msg.value() == b"%d" % i

    asyncio.run(main())


def _drop_aio_consumers(kafka, topic: str, cls) -> None:
    tp = (confluent_kafka if cls is confluent_aio.AIOConsumer else kafka_fast).TopicPartition

    async def main():
        for _ in range(5):
            consumer = cls(kafka.client_config({"group.id": unique_topic("g")}))
            await consumer.assign([tp(topic, 0, 0)])
            msg = await consumer.poll(30)
            assert msg is not None and msg.offset() == 0

    asyncio.run(main())


def _drop_producers(kafka, topic: str, cls) -> None:
    for i in range(5):
        producer = cls(kafka.client_config())
        producer.produce(topic, b"%d" % i)
        assert producer.flush(30) == 0


def _drop_consumers(kafka, topic: str, cls) -> None:
    for _ in range(5):
        consumer = cls(kafka.client_config({"group.id": unique_topic("g")}))
        consumer.assign([kafka_fast.TopicPartition(topic, 0, 0)])
        msg = consumer.poll(30)
        assert msg is not None and msg.offset() == 0


@pytest.mark.parametrize("drop, cls", [
    (_drop_aio_producers, confluent_aio.AIOProducer),
    (_drop_aio_producers, AIOProducer),
    (_drop_aio_consumers, confluent_aio.AIOConsumer),
    (_drop_aio_consumers, AIOConsumer),
    (_drop_producers, kafka_fast.Producer),
    (_drop_consumers, kafka_fast.Consumer),
], ids=["confluent-AIOProducer", "AIOProducer", "confluent-AIOConsumer", "AIOConsumer",
        "Producer", "Consumer"])
def test_clients_dropped_without_close_release_threads_and_sockets(kafka, drop, cls):
    topic = unique_topic("aio-drop")
    create_topic(kafka, topic, 1)
    with kafka_fast.Producer(kafka.client_config()) as p:
        p.produce(topic, b"first")
        assert p.flush(30) == 0
    base = _settled(_usage(), 2.0)
    drop(kafka, topic, cls)
    threads, fds = _settled(base)
    assert threads <= base[0] and fds <= base[1], (
        base, (threads, fds), [t.name for t in threading.enumerate()])


def _values(result) -> list[bytes]:
    """The record values of what a read returned (a Message, None, a list or a view)."""
    if result is None:
        return []
    if isinstance(result, kafka_fast.Message):
        return [result.value()] if result.error() is None else []
    return [m.value() for m in result if m.error() is None]


def test_a_cancelled_read_loses_no_record(kafka):
    """Reads cancelled at every stage (before, while and after their worker call gets a record)
    lose nothing: every record comes out exactly once, in order."""
    topic = unique_topic("aio-cancel")
    create_topic(kafka, topic, 1)
    count = 36

    async def main():
        producer = kafka_fast.Producer(kafka.client_config())
        consumer = AIOConsumer(kafka.client_config({"group.id": unique_topic("g")}))
        await consumer.assign([kafka_fast.TopicPartition(topic, 0, 0)])
        reads = [lambda: consumer.poll(10), lambda: consumer.consume(5, 10),
                 lambda: consumer.consume_batch(5, 10)]
        got: list[bytes] = []
        cancelled = 0
        for i in range(count):
            if i % 2:  # the read waits, then its record arrives while the loop is blocked
                task = asyncio.ensure_future(reads[i % 3]())
                await asyncio.sleep((i // 2 % 3) * 0.1)
                producer.produce(topic, b"%d" % i)
                assert producer.flush(30) == 0
                time.sleep(0.05)
            else:  # the record is there before the read starts
                producer.produce(topic, b"%d" % i)
                assert producer.flush(30) == 0
                task = asyncio.ensure_future(reads[i % 3]())
                await asyncio.sleep((i // 2 % 3) * 0.1)
            if task.done():
                got += _values(task.result())
            else:
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                cancelled += 1
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            got += _values(await consumer.consume(count, 1.0))
        extra = _values(await consumer.poll(1.0))
        await consumer.close()
        producer.close()
        return got, extra, cancelled

    got, extra, cancelled = asyncio.run(main())
    assert cancelled >= count // 4
    assert got == [b"%d" % i for i in range(count)]
    assert extra == []


@pytest.mark.parametrize("read, empty", [
    (lambda c: c.poll(20), None),
    (lambda c: c.consume(10, 20), []),
    (lambda c: c.consume_batch(10, 20), 0),
], ids=["poll", "consume", "consume_batch"])
def test_close_while_a_read_is_in_flight_is_bounded(kafka, read, empty):
    topic = unique_topic("aio-close")
    create_topic(kafka, topic, 1)

    async def main():
        consumer = AIOConsumer(kafka.client_config({"group.id": unique_topic("g")}))
        await consumer.assign([kafka_fast.TopicPartition(topic, 0, 0)])
        task = asyncio.ensure_future(read(consumer))
        await asyncio.sleep(1.0)  # the read waits on an empty partition
        assert not task.done()
        start = time.monotonic()
        await asyncio.wait_for(consumer.close(), 10)
        took = time.monotonic() - start
        result = await asyncio.wait_for(task, 1)
        with pytest.raises(RuntimeError, match="Consumer closed"):
            await consumer.poll(0)
        return took, result

    took, result = asyncio.run(main())
    assert took < 3.0
    if empty == 0:
        assert len(result) == 0
    else:
        assert result == empty


def test_producer_callbacks_never_hold_up_delivery_reports(kafka):
    """A stats_cb coroutine that awaits a delivery (the delivery thread used to wait for the
    callback, which waited for the delivery thread: no report was ever served again) and a
    slow one (every report waited for it)."""
    topic = unique_topic("aio-stats")
    create_topic(kafka, topic, 1)
    from_stats: list = []
    slow: list = []

    async def main():
        loop = asyncio.get_running_loop()
        producer = None

        async def stats_cb(json_str):
            if not from_stats:
                from_stats.append(None)
                delivered = await asyncio.wait_for(
                    await producer.produce(topic, b"from stats_cb"), 30)
                from_stats[0] = delivered.offset()
            elif not slow:
                slow.append(loop.time())
                await asyncio.sleep(5)

        producer = AIOProducer(kafka.client_config({"statistics.interval.ms": 200,
                                                    "stats_cb": stats_cb}))
        deadline = loop.time() + 30
        while (not slow or from_stats[0] is None) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        # The slow callback sleeps now; a record produced meanwhile is reported at once.
        start = loop.time()
        msg = await asyncio.wait_for(await producer.produce(topic, b"meanwhile"), 30)
        took = loop.time() - start
        await producer.close()
        return msg, took

    msg, took = asyncio.run(main())
    assert from_stats == [0]
    assert (msg.value(), msg.offset()) == (b"meanwhile", 1)
    assert took < 3.0


def test_a_raising_stats_cb_goes_to_the_exception_handler_and_reports_go_on(kafka):
    topic = unique_topic("aio-stats-raise")
    create_topic(kafka, topic, 1)
    calls: list = []

    def stats_cb(json_str):
        calls.append(json_str)
        raise ValueError("stats")

    async def main():
        handled: list = []
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, ctx: handled.append(ctx))
        producer = AIOProducer(kafka.client_config({"statistics.interval.ms": 100,
                                                    "stats_cb": stats_cb}))
        msgs = []
        for i in range(10):
            msgs.append(await asyncio.wait_for(await producer.produce(topic, b"%d" % i), 30))
            await asyncio.sleep(0.05)
        deadline = loop.time() + 10
        while len(calls) < 3 and loop.time() < deadline:
            await asyncio.sleep(0.05)
        await producer.close()
        return msgs, handled

    msgs, handled = asyncio.run(main())
    assert [(m.value(), m.offset()) for m in msgs] == [(b"%d" % i, i) for i in range(10)]
    assert len(calls) >= 3
    assert len(handled) == len(calls)
    assert all(isinstance(ctx["exception"], ValueError) for ctx in handled)


def _write(kafka, topic: str, values: list[bytes]) -> None:
    with kafka_fast.Producer(kafka.client_config()) as p:
        for v in values:
            p.produce(topic, v, partition=0)
        assert p.flush(30) == 0


def test_a_read_cancelled_while_deserializing_loses_no_record(kafka):
    from kafka_fast.aio import AsyncDeserializingConsumer

    topic = unique_topic("aio-deser-cancel")
    create_topic(kafka, topic, 1)
    _write(kafka, topic, [b"%d" % i for i in range(6)])
    gate = asyncio.Event()

    async def value_deserializer(data, ctx):  # waits while the gate is shut
        await gate.wait()
        return int(data)

    async def main():
        conf = kafka.client_config({"group.id": unique_topic("g"),
                                    "value.deserializer": value_deserializer})
        async with await AsyncDeserializingConsumer(conf) as consumer:
            await consumer.assign([kafka_fast.TopicPartition(topic, 0, 0)])
            for read in (lambda: consumer.consume(3, 10), lambda: consumer.poll(10)):
                task = asyncio.ensure_future(read())
                await asyncio.sleep(1.0)  # the read has its records and waits on the gate
                assert not task.done()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            gate.set()
            got: list = []
            deadline = time.monotonic() + 30
            while len(got) < 6 and time.monotonic() < deadline:
                got += await consumer.consume(6, 1.0)
            return [(m.offset(), m.value()) for m in got]

    assert asyncio.run(main()) == [(i, i) for i in range(6)]


def test_a_failing_deserializer_in_consume_loses_no_record(kafka):
    from kafka_fast.aio import AsyncDeserializingConsumer
    from kafka_fast.error import ValueDeserializationError

    topic = unique_topic("aio-deser-fail")
    create_topic(kafka, topic, 1)
    _write(kafka, topic, [b"0", b"1", b"bad", b"3", b"4"])

    async def main():
        conf = kafka.client_config({"group.id": unique_topic("g"),
                                    "value.deserializer": lambda data, ctx: int(data)})
        async with await AsyncDeserializingConsumer(conf) as consumer:
            await consumer.assign([kafka_fast.TopicPartition(topic, 0, 0)])
            outcomes: list = []
            deadline = time.monotonic() + 30
            while sum(len(o) if isinstance(o, list) else 1 for o in outcomes) < 5 \
                    and time.monotonic() < deadline:
                try:
                    msgs = await consumer.consume(5, 1.0)
                except ValueDeserializationError as exc:
                    msg = exc.kafka_message
                    outcomes.append(("failed", msg.offset(), msg.value()))
                else:
                    if msgs:
                        outcomes.append([(m.offset(), m.value()) for m in msgs])
            return outcomes

    outcomes = asyncio.run(main())
    # Whatever the fetches bring at once: the records before the bad one, then the failure,
    # then the rest, each exactly once.
    flat = [x for o in outcomes for x in (o if isinstance(o, list) else [o])]
    assert flat == [(0, 0), (1, 1), ("failed", 2, b"bad"), (3, 3), (4, 4)]
