"""AIOConsumer on real brokers: poll/consume/batches, coroutine rebalance callbacks that call
back into the consumer, a group rebalancing between two asyncio consumers."""

from __future__ import annotations

import asyncio
import time

from harness.topics import create_topic, unique_topic

from kafka_fast import Producer, TopicPartition
from kafka_fast.aio import AIOConsumer


def _fill(broker, topic: str, partitions: int, per_partition: int) -> None:
    with Producer(broker.client_config({"linger.ms": 2})) as p:
        for q in range(partitions):
            for i in range(per_partition):
                p.produce(topic, b"%d-%d" % (q, i), partition=q)
        assert p.flush(30) == 0


def test_poll_consume_and_batches_read_every_record(broker):
    topic = unique_topic("aioc")
    create_topic(broker, topic, 1)
    _fill(broker, topic, 1, 300)

    async def main():
        async with AIOConsumer(broker.client_config({"group.id": unique_topic("g")})) as c:
            await c.assign([TopicPartition(topic, 0, 0)])
            first = await c.poll(10)
            more = await c.consume(99, 10)
            while len(more) < 99:
                more += await c.consume(99 - len(more), 10)
            values = [first.value()] + [m.value() for m in more]
            async for view in c.batches(max_records=1000, timeout=1.0):
                values += view.values.to_pylist()
                if len(values) >= 300:
                    break
            return values

    assert asyncio.run(main()) == [b"0-%d" % i for i in range(300)]


def test_coroutine_on_assign_can_call_back_into_the_consumer(broker):
    topic = unique_topic("aioc-assign")
    create_topic(broker, topic, 2)
    _fill(broker, topic, 2, 20)
    calls = []

    async def on_assign(consumer, partitions):
        assert isinstance(consumer, AIOConsumer)
        calls.append(sorted(p.partition for p in partitions))
        # Start every partition at offset 10: a consumer call made from inside the callback.
        await consumer.assign([TopicPartition(p.topic, p.partition, 10) for p in partitions])

    async def main():
        conf = broker.client_config({"group.id": unique_topic("g"), "session.timeout.ms": 6000,
                                     "auto.offset.reset": "earliest"})
        async with AIOConsumer(conf) as c:
            await c.subscribe([topic], on_assign=on_assign)
            got = []
            deadline = time.monotonic() + 60
            while len(got) < 20 and time.monotonic() < deadline:
                got += [m for m in await c.consume(20, 1.0) if m.error() is None]
            return got

    got = asyncio.run(main())
    assert calls == [[0, 1]]
    assert sorted((m.partition(), m.offset()) for m in got) == [
        (q, o) for q in (0, 1) for o in range(10, 20)]


def test_two_asyncio_consumers_split_a_group(broker):
    topic = unique_topic("aioc-group")
    create_topic(broker, topic, 4)
    _fill(broker, topic, 4, 50)
    group = unique_topic("g")
    everything = {(p, o) for p in range(4) for o in range(50)}

    async def member(seen, stop):
        conf = broker.client_config({"group.id": group, "auto.offset.reset": "earliest",
                                     "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                                     "partition.assignment.strategy": "range"})
        async with AIOConsumer(conf) as c:
            await c.subscribe([topic])
            while not stop.is_set():
                for m in await c.consume(100, 0.2):
                    if m.error() is None:
                        seen.add((m.partition(), m.offset()))
            return sorted(p.partition for p in await c.assignment())

    async def main():
        seen_a, seen_b, stop = set(), set(), asyncio.Event()
        a = asyncio.ensure_future(member(seen_a, stop))
        while seen_a != everything:  # the first member alone reads everything ...
            await asyncio.sleep(0.1)
        b = asyncio.ensure_future(member(seen_b, stop))
        # ... then the second joins; once it owns partitions, both share the group.
        await asyncio.sleep(0.5)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not seen_b:
            with Producer(broker.client_config()) as p:
                for q in range(4):
                    p.produce(topic, b"late", partition=q)
                assert p.flush(30) == 0
            await asyncio.sleep(1.0)
        stop.set()
        return await asyncio.wait_for(asyncio.gather(a, b), 60), seen_a, seen_b

    (owned_a, owned_b), seen_a, seen_b = asyncio.run(main())
    assert everything <= seen_a | seen_b
    assert owned_a and owned_b and sorted(owned_a + owned_b) == [0, 1, 2, 3]
    assert {p for p, _ in seen_b} <= set(owned_b) | set(owned_a)
    assert seen_b, "the second member never received records"
