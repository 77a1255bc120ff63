"""AIOProducer on real brokers: delivered messages, errors in the awaiting task, cancellation,
close with pending deliveries, produce_batch, transactions."""

from __future__ import annotations

import asyncio
import gc
import time

import numpy as np
import pytest
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import KafkaError, KafkaException, Message
from kafka_fast._impl import load
from kafka_fast.aio import AIOProducer

#: Long enough that a produce() blocking for space would be told from a loaded machine.
LINGER_MS = 4000


def run(coro):
    return asyncio.run(coro)


def test_produce_resolves_to_the_delivered_message(broker):
    topic = unique_topic("aio")
    create_topic(broker, topic, 2)

    async def main():
        async with AIOProducer(broker.client_config({"linger.ms": 2})) as producer:
            futures = [await producer.produce(topic, b"v%d" % i, b"k%d" % i, partition=i % 2)
                       for i in range(200)]
            return await asyncio.gather(*futures)

    msgs = run(main())
    assert [(m.value(), m.key(), m.partition()) for m in msgs] == [
        (b"v%d" % i, b"k%d" % i, i % 2) for i in range(200)]
    # Reports holding only bytes are kept out of the cyclic garbage collector (compiled
    # engine; the pure twin builds ordinary, tracked messages).
    if load("_columns", "columns")[1]:
        assert not any(gc.is_tracked(m) for m in msgs)
    for p in (0, 1):
        assert [m.offset() for m in msgs if m.partition() == p] == list(range(100))
    got = read_confluent(broker, topic, 2, 200)
    assert sorted(g.value for g in got) == sorted(b"v%d" % i for i in range(200))


def test_a_failed_delivery_raises_in_the_awaiting_task(broker):
    topic = unique_topic("aio-fail")
    create_topic(broker, topic, 1)

    async def main():
        async with AIOProducer(broker.client_config({"message.max.bytes": 2000})) as producer:
            with pytest.raises(KafkaException) as info:
                await producer.produce(topic, b"x" * 5000)  # refused when queued
            assert info.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
            # No such partition: refused at once when the topic's metadata is already known,
            # otherwise the delivery future fails once it is.
            with pytest.raises(KafkaException) as info:
                future = await producer.produce(topic, b"fine", partition=7)
                await asyncio.wait_for(future, 30)
            return info.value.args[0].code()

    assert run(main()) in (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART)


def test_cancelled_waiters_still_get_their_records_delivered_and_reported(broker):
    topic = unique_topic("aio-cancel")
    create_topic(broker, topic, 1)
    reports = []

    async def main():
        producer = AIOProducer(broker.client_config({"linger.ms": 50}))
        futures = [await producer.produce(topic, b"%d" % i,
                                          on_delivery=lambda err, msg: reports.append(
                                              (err, msg.offset())))
                   for i in range(50)]
        waiter = asyncio.ensure_future(asyncio.gather(*futures))
        await asyncio.sleep(0)
        waiter.cancel()
        await producer.close()  # close with deliveries pending
        return futures

    futures = run(main())
    assert all(f.cancelled() for f in futures)
    assert sorted(reports) == [(None, i) for i in range(50)]
    assert [g.value for g in read_confluent(broker, topic, 1, 50)] == [b"%d" % i for i in range(50)]


def test_produce_batch_resolves_when_every_record_is_delivered(broker):
    topic = unique_topic("aio-batch")
    create_topic(broker, topic, 3)
    values = np.arange(3000 * 8, dtype=np.uint8).reshape(3000, 8)

    async def main():
        async with AIOProducer(broker.client_config()) as producer:
            await producer.produce_batch(topic, values, keys=[b"k%d" % (i % 7) for i in range(3000)])
            return len(producer)

    assert run(main()) == 0
    got = read_confluent(broker, topic, 3, 3000)
    assert sorted(g.value for g in got) == sorted(bytes(r) for r in values)


async def _ticker(ticks: list[float], stop: asyncio.Event) -> None:
    """Note the loop's time every 10 ms until ``stop``: a long gap is the loop stalling."""
    while not stop.is_set():
        ticks.append(asyncio.get_running_loop().time())
        await asyncio.sleep(0.01)


def test_the_loop_is_never_blocked_while_the_queue_is_full(broker):
    """The 101st record waits for the first 100 to be sent after their 4 s linger: a produce()
    that blocked for space would stop the loop that long; one that awaits keeps it ticking."""
    topic = unique_topic("aio-full")
    create_topic(broker, topic, 1)
    ticks: list[float] = []
    waited: list[float] = []

    async def main():
        stop = asyncio.Event()
        tick_task = asyncio.ensure_future(_ticker(ticks, stop))
        async with AIOProducer(broker.client_config(
                {"queue.buffering.max.messages": 100, "linger.ms": LINGER_MS})) as producer:
            await asyncio.sleep(0.05)  # the ticker is running before the queue fills
            futures = [await producer.produce(topic, b"%05d" % i) for i in range(100)]
            started = time.monotonic()
            futures += [await producer.produce(topic, b"%05d" % i) for i in range(100, 200)]
            waited.append(time.monotonic() - started)
            msgs = await asyncio.gather(*futures)
        stop.set()
        await tick_task
        return msgs

    msgs = run(main())
    assert [(m.offset(), m.value()) for m in msgs] == [(i, b"%05d" % i) for i in range(200)]
    assert waited[0] >= 0.9 * LINGER_MS / 1000, f"no wait for space: {waited[0]:.2f}s"
    gaps = np.diff(ticks)
    assert len(ticks) > 3 and gaps.max() < LINGER_MS / 2000, \
        f"the loop stalled for {gaps.max():.2f}s"


def test_a_large_produce_batch_to_a_stalled_broker_never_blocks_the_loop(fresh_mock_cluster):
    """40 MB for a leader that stopped answering: the synchronous produce_batch waits for
    acknowledgements (delivery.timeout.ms in all) before queueing the rest; on the executor,
    the loop keeps running meanwhile, and every record is then reported failed."""
    cluster = fresh_mock_cluster
    topic = unique_topic("aio-stalled")
    create_topic(cluster, topic, 1)
    n = 100_000
    values = np.full((n, 400), ord("x"), dtype=np.uint8)
    ticks: list[float] = []

    async def main():
        stop = asyncio.Event()
        tick_task = asyncio.ensure_future(_ticker(ticks, stop))
        conf = cluster.client_config({"batch.size": 262_144, "delivery.timeout.ms": 1500,
                                      "request.timeout.ms": 1000, "retries": 0})
        async with AIOProducer(conf) as producer:
            meta = await producer.list_topics(topic, 10)
            leader = meta.topics[topic].partitions[0].leader
            cluster.set_rtt(leader, 20_000)
            try:
                with pytest.raises(KafkaException) as info:
                    await producer.produce_batch(topic, values, partition=0)
            finally:
                cluster.set_rtt(leader, 0)
        stop.set()
        await tick_task
        return info.value.args[0].code()

    # delivery.timeout.ms or, first under load, request.timeout.ms (retries=0) ends them
    assert run(main()) in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT)
    gaps = np.diff(ticks)
    assert ticks[-1] - ticks[0] >= 1.0 and gaps.max() < 0.5, f"the loop stalled {gaps.max():.2f}s"


def test_error_cb_coroutine_runs_on_the_loop():
    seen = []
    loops = []

    async def on_error(err):
        seen.append((err.code(), asyncio.get_running_loop() is loops[0]))

    async def main():
        loops.append(asyncio.get_running_loop())
        producer = AIOProducer({"bootstrap.servers": "127.0.0.1:1", "error_cb": on_error,
                                "message.timeout.ms": 1500, "reconnect.backoff.max.ms": 100})
        future = await producer.produce("nowhere", b"x")
        with pytest.raises(KafkaException) as info:
            await asyncio.wait_for(future, 20)
        await producer.close()
        return info.value.args[0].code()

    # delivery.timeout.ms or, first under load, request.timeout.ms (retries=0) ends them
    assert run(main()) in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT)
    assert seen and all(on_loop for _, on_loop in seen)


def test_calls_after_close_raise():
    async def main():
        producer = AIOProducer({"bootstrap.servers": "127.0.0.1:1"})
        await producer.close()
        with pytest.raises(RuntimeError, match="closed"):
            await producer.produce("t", b"x")

    run(main())


def test_transactions_commit_and_abort(real_broker):
    topic = unique_topic("aio-txn")
    create_topic(real_broker, topic, 1)

    async def main():
        conf = real_broker.client_config({"transactional.id": f"aio-{topic}"})
        async with AIOProducer(conf) as producer:
            await producer.init_transactions(30)
            await producer.begin_transaction()
            committed = [await producer.produce(topic, b"c%d" % i) for i in range(10)]
            await producer.commit_transaction(30)
            await producer.begin_transaction()
            aborted = [await producer.produce(topic, b"a%d" % i) for i in range(5)]
            await producer.abort_transaction(30)
            await producer.begin_transaction()
            last = await producer.produce(topic, b"last")
            await producer.commit_transaction(30)
            done = await asyncio.gather(*aborted, return_exceptions=True)
            return ([m.offset() for m in await asyncio.gather(*committed)], done,
                    (await last).offset())

    offsets, aborted, last = run(main())
    assert offsets == list(range(10)) and last > 10
    # Each aborted record was either purged before it was sent, or written (after the
    # commit marker at offset 10, before `last`) and then aborted.
    for outcome in aborted:
        if isinstance(outcome, Message):
            assert 10 < outcome.offset() < last, outcome.offset()
        else:
            assert isinstance(outcome, KafkaException), outcome
            assert outcome.args[0].code() in (KafkaError._PURGE_QUEUE,
                                              KafkaError._PURGE_INFLIGHT), outcome
    assert [g.value for g in read_confluent(real_broker, topic, 1, 11)] == [
        *(b"c%d" % i for i in range(10)), b"last"]


def test_produce_and_consume_under_uvloop(real_broker):
    import uvloop

    from kafka_fast.aio import AIOConsumer

    topic = unique_topic("aio-uvloop")
    create_topic(real_broker, topic, 2)

    async def main():
        async with AIOProducer(real_broker.client_config({"linger.ms": 2})) as producer:
            futures = [await producer.produce(topic, b"u%d" % i, partition=i % 2)
                       for i in range(100)]
            delivered = await asyncio.gather(*futures)
            await producer.produce_batch(topic, [b"b%d" % i for i in range(50)], partition=0)
        conf = real_broker.client_config({"group.id": f"g-{topic}",
                                          "auto.offset.reset": "earliest"})
        async with AIOConsumer(conf) as consumer:
            await consumer.subscribe([topic])
            got = []
            deadline = asyncio.get_running_loop().time() + 60
            while len(got) < 150 and asyncio.get_running_loop().time() < deadline:
                got += [m for m in await consumer.consume(200, 1.0) if m.error() is None]
        return asyncio.get_running_loop(), delivered, got

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        loop, delivered, got = runner.run(main())
    assert isinstance(loop, uvloop.Loop)
    assert [(m.value(), m.partition()) for m in delivered] == [
        (b"u%d" % i, i % 2) for i in range(100)]
    assert sorted(m.value() for m in got) == sorted(
        [b"u%d" % i for i in range(100)] + [b"b%d" % i for i in range(50)])
    assert sorted((m.partition(), m.offset()) for m in got) == sorted(
        [(1, o) for o in range(50)] + [(0, o) for o in range(100)])
