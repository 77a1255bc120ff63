"""AIOShareConsumer on Apache Kafka 4.4: records from an asyncio program, RELEASE and the
redelivery count, a coroutine acknowledgement callback, and a cancelled poll losing nothing
(neither records nor the error it raised)."""

from __future__ import annotations

import asyncio
import time

import pytest
from share_support import new_group, new_topic, produce

from kafka_fast import AcknowledgeType, IllegalStateException, TopicPartition
from kafka_fast.aio import AIOShareConsumer


async def _poll_until(consumer: AIOShareConsumer, count: int, timeout: float = 30.0) -> list:
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, len(got)
        got.extend(await consumer.poll(0.5))
    return got


def test_aio_share_consumer_acknowledges_and_redelivers(apache_share_kafka):
    bootstrap = apache_share_kafka.bootstrap
    topic = new_topic(bootstrap, records=4)
    group = new_group(bootstrap)
    committed: list = []

    async def on_commit(offsets, exc):
        assert asyncio.get_running_loop() is loop
        committed.append((offsets, exc))

    async def main():
        async with AIOShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                     "share.acknowledgement.mode": "explicit"}) as c:
            await c.set_acknowledgement_commit_callback(on_commit)
            await c.subscribe([topic])
            assert await c.subscription() == [topic]
            first = await _poll_until(c, 4)
            for msg in first:
                await c.acknowledge(msg, AcknowledgeType.RELEASE if msg.offset() == 2
                                    else AcknowledgeType.ACCEPT)
            assert await c.commit_sync() == {TopicPartition(topic, 0): None}
            again = await _poll_until(c, 1)
            await c.acknowledge_offset(topic, 0, 2, AcknowledgeType.ACCEPT)
            await c.commit_async()
            deadline = time.monotonic() + 10
            while len(committed) < 2:
                assert time.monotonic() < deadline
                assert len(await c.poll(0.2)) == 0
            return first, again

    loop = None

    async def run():
        nonlocal loop
        loop = asyncio.get_running_loop()
        return await main()

    first, again = asyncio.run(run())
    assert [(m.offset(), m.value(), m.delivery_count()) for m in first] == [
        (i, b"v%d" % i, 1) for i in range(4)]
    assert [(m.offset(), m.value(), m.delivery_count()) for m in again] == [(2, b"v2", 2)]
    assert committed == [({TopicPartition(topic, 0): {0, 1, 2, 3}}, None),
                         ({TopicPartition(topic, 0): {2}}, None)]


def test_a_cancelled_poll_loses_no_record(apache_share_kafka):
    bootstrap = apache_share_kafka.bootstrap
    topic = new_topic(bootstrap)
    group = new_group(bootstrap)

    async def main():
        async with AIOShareConsumer({"bootstrap.servers": bootstrap,
                                     "group.id": group}) as c:
            await c.subscribe([topic])
            assert len(await c.poll(2.0)) == 0  # joined, nothing written yet
            task = asyncio.ensure_future(c.poll(30))
            await asyncio.sleep(0.2)
            produce(bootstrap, topic, [b"a", b"b", b"c"])
            await asyncio.sleep(1.0)
            task.cancel()
            got: list = []
            try:
                got.extend(await task)
            except asyncio.CancelledError:
                pass
            got.extend(await _poll_until(c, 3 - len(got)) if len(got) < 3 else [])
            return got

    got = asyncio.run(main())
    assert [(m.offset(), m.value()) for m in got] == [(0, b"a"), (1, b"b"), (2, b"c")]


def test_a_cancelled_poll_keeps_its_error_for_the_next_poll(apache_share_kafka):
    bootstrap = apache_share_kafka.bootstrap
    topic = new_topic(bootstrap, records=3)
    group = new_group(bootstrap)

    async def main():
        async with AIOShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                     "share.acknowledgement.mode": "explicit"}) as c:
            await c.subscribe([topic])
            first = await _poll_until(c, 3)
            # A poll before the records are acknowledged raises on its worker thread; its
            # task is cancelled before the error reaches it.
            task = asyncio.ensure_future(c.poll(30))
            await asyncio.sleep(0)  # the poll is on the worker thread
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for msg in first:
                await c.acknowledge(msg)
            # All acknowledged now, yet the next poll hands out the error the cancelled one
            # raised; the one after it polls again.
            with pytest.raises(IllegalStateException, match="are not acknowledged"):
                await c.poll(0.5)
            assert await c.commit_sync() == {TopicPartition(topic, 0): None}
            assert len(await c.poll(0.5)) == 0
            return first

    first = asyncio.run(main())
    assert [(m.offset(), m.value()) for m in first] == [(i, b"v%d" % i) for i in range(3)]


def test_aio_share_consumer_refuses_calls_after_close(apache_share_kafka):
    async def main():
        c = AIOShareConsumer({"bootstrap.servers": apache_share_kafka.bootstrap,
                              "group.id": "aio-share-closed"})
        await c.close()
        await c.close()
        with pytest.raises(RuntimeError, match="ShareConsumer closed"):
            await c.poll(0)
        with pytest.raises(TypeError, match="timeout must be a number"):
            await c.poll("1")

    asyncio.run(main())
