"""produce_batch (every column form) and AIOProducer.produce_batch follow produce()'s record
rules on Apache Kafka: partitions, timestamps, column forms, buffers held for the call, and a
call that fails part way says exactly which rows it queued."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from harness.topics import create_topic, unique_topic
from readback import high_watermarks, read_confluent

from kafka_fast import KafkaError, KafkaException, Producer
from kafka_fast.aio import AIOProducer


def _packed(items: list[bytes | None]) -> tuple:
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([0 if x is None else len(x) for x in items])
    nulls = np.array([x is None for x in items], dtype=np.bool_)
    return (b"".join(x or b"" for x in items), offsets, nulls)


def _forms(values: list[bytes]) -> dict:
    width = len(values[0])
    return {
        "list": list(values),
        "array": np.frombuffer(b"".join(values), np.uint8).reshape(len(values), width),
        "packed": _packed(values),
    }


FORMS = ["list", "array", "packed"]


@pytest.mark.parametrize("form", FORMS)
def test_partitions_produce_refuses_are_refused_by_every_column_form(kafka, form):
    """-5 and -2 were queued to a partition the partitioner chose (and a partition past
    the topic's end raised): each now raises produce()'s _UNKNOWN_PARTITION, nothing queued."""
    topic = unique_topic(f"bc-part-{form}")
    create_topic(kafka, topic, 2)
    with Producer(kafka.client_config()) as p:
        p.list_topics(topic, 10)
        for partition in (-5, -2, 2, -(1 << 31)):
            with pytest.raises(KafkaException) as single:
                p.produce(topic, b"ab", partition=partition)
            with pytest.raises(KafkaException) as batch:
                p.produce_batch(topic, _forms([b"ab", b"cd"])[form], partition=partition)
            assert batch.value.args[0].code() == single.value.args[0].code() \
                == KafkaError._UNKNOWN_PARTITION
            assert batch.value.args[0].str() == single.value.args[0].str()
            assert len(p) == 0
        # and the partitions it takes still work
        assert p.produce_batch(topic, _forms([b"ab", b"cd"])[form], partition=1) == 2
        assert p.flush(30) == 0
    assert high_watermarks(kafka, topic, 2) == [0, 2]


def test_unknown_partition_report_carries_the_partition_given(kafka):
    """A record for a topic whose partitions are not known yet, to partition -5: the
    _UNKNOWN_PARTITION report says partition -5, as confluent-kafka's does (it said None)."""
    import confluent_kafka

    topic = unique_topic("bc-report")
    create_topic(kafka, topic, 2)
    got = {}
    for name, cls in (("kafka_fast", Producer), ("confluent", confluent_kafka.Producer)):
        reports = []
        p = cls(kafka.client_config())
        p.produce(topic, b"x", partition=-5,
                  on_delivery=lambda e, m, reports=reports: reports.append(
                      (e.code(), m.topic(), m.partition(), m.value())))
        assert p.flush(30) == 0
        got[name] = reports
    assert got["kafka_fast"] == got["confluent"] == [
        (KafkaError._UNKNOWN_PARTITION, topic, -5, b"x")]


BAD_TIMESTAMPS = [
    (np.array([2**64 - 1], dtype=np.uint64), OverflowError),  # was stored as -1
    (np.array([1.9]), TypeError),  # was stored as 1
    ([1.9], TypeError),
    ([-5], ValueError),  # was written as given
    (np.array([-5], dtype=np.int32), ValueError),
    ([2**62], OverflowError),  # was written as given
    (np.array([2**62], dtype=np.int64), OverflowError),
    ([True], TypeError),
    ([2**70], OverflowError),
    (1.9, TypeError),
    (-5, ValueError),
]


@pytest.mark.parametrize("form", FORMS)
def test_timestamps_get_produces_errors(kafka, form):
    topic = unique_topic(f"bc-ts-{form}")
    create_topic(kafka, topic, 1)
    with Producer(kafka.client_config()) as p:
        for stamps, error in BAD_TIMESTAMPS:
            one = stamps if not hasattr(stamps, "__len__") else stamps[0]
            if isinstance(one, np.generic):
                one = one.item()
            with pytest.raises(error, match="timestamp"):
                p.produce(topic, b"ab", timestamp=one)
            with pytest.raises(error, match="timestamp"):
                p.produce_batch(topic, _forms([b"ab"])[form], timestamps=stamps)
            assert len(p) == 0
        # numpy integers of any width are timestamps, in produce() as in produce_batch
        p.produce(topic, b"ab", timestamp=np.uint16(7))
        assert p.produce_batch(topic, _forms([b"cd"])[form],
                               timestamps=np.array([2**40], dtype=np.uint64)) == 1
        assert p.flush(30) == 0
    got = read_confluent(kafka, topic, 1, 2)
    assert [(g.value, g.timestamp) for g in got] == [(b"ab", 7), (b"cd", 2**40)]


def test_packed_offsets_must_be_one_dimensional(kafka):
    """2-D offsets made the call return 0 and produce nothing; now a ValueError names them."""
    topic = unique_topic("bc-offsets")
    create_topic(kafka, topic, 1)
    with Producer(kafka.client_config()) as p:
        with pytest.raises(ValueError, match="values packed offsets must be a 1-D array"):
            p.produce_batch(topic, (b"abc", np.array([[0, 1, 3]])))
        with pytest.raises(ValueError, match="keys packed offsets must be a 1-D array"):
            p.produce_batch(topic, [b"a"], keys=(b"abc", np.array([[0], [1]])))
        with pytest.raises(TypeError, match="packed offsets must be integers"):
            p.produce_batch(topic, (b"abc", np.array([0.0, 3.0])))
        assert len(p) == 0

    async def aio():
        async with AIOProducer(kafka.client_config()) as producer:
            with pytest.raises(ValueError, match="values packed offsets must be a 1-D array"):
                await producer.produce_batch(topic, (b"abc", np.array([[0, 1, 3]])))

    asyncio.run(aio())
    assert high_watermarks(kafka, topic, 1) == [0]


def test_packed_data_is_held_for_the_whole_call(kafka):
    """A memoryview released while the call runs (here by a delivery callback the call
    serves while it waits for queue room) failed the call after part of it was queued; the
    call now keeps the buffer exported itself: the buffer cannot be resized under it and
    every record is delivered."""
    topic = unique_topic("bc-held")
    create_topic(kafka, topic, 1)
    n = 100_000
    data = bytearray(b"".join(b"%07d" % i for i in range(n)))
    view = memoryview(data)
    offsets = np.arange(0, 7 * n + 1, 7, dtype=np.int64)
    tried: list[str] = []

    def report(err, msg):
        if not tried:
            view.release()
            try:
                del data[:]
                tried.append("resized")
            except BufferError as exc:
                tried.append(str(exc))

    conf = kafka.client_config({"queue.buffering.max.messages": 10_000,
                                "batch.num.messages": 1000})
    with Producer(conf) as p:
        assert p.produce_batch(topic, (view, offsets), on_delivery=report) == n
        assert tried and tried[0] != "resized"  # the callback ran during the call
        assert p.flush(60) == 0
    got = read_confluent(kafka, topic, 1, n)
    assert [g.value for g in got] == [b"%07d" % i for i in range(n)]


def test_a_call_failing_part_way_says_which_rows_it_queued(kafka):
    """An exception raised in the middle of a call (a delivery callback served while the
    call waits for room raises) carries the indices of the rows queued before it: exactly
    those are delivered, in order per partition; no other row is."""
    topic = unique_topic("bc-partial")
    create_topic(kafka, topic, 2)
    n = 30_000
    values = [b"v%06d" % i for i in range(n)]
    keys = [b"k%d" % (i % 101) for i in range(n)]
    raised: list[int] = []

    def report(err, msg):
        if not raised:
            raised.append(1)
            raise RuntimeError("application callback failed")

    conf = kafka.client_config({"queue.buffering.max.messages": 5_000,
                                "batch.num.messages": 500})
    with Producer(conf) as p:
        with pytest.raises(RuntimeError, match="application callback failed") as info:
            p.produce_batch(topic, _packed(values), keys=_packed(keys), on_delivery=report)
        rows = info.value.queued_rows
        assert 0 < len(rows) < n
        assert f"produce_batch queued {len(rows)} of {n} records" in "".join(
            info.value.__notes__)
        assert p.flush(60) == 0
    got = read_confluent(kafka, topic, 2, len(rows))
    assert sorted(g.value for g in got) == sorted(values[i] for i in rows.tolist())
    for part in (0, 1):
        idx = [int(g.value[1:]) for g in got if g.partition == part]
        assert idx == sorted(idx)


def test_tuples_hold_records_in_the_sync_and_the_asyncio_call(kafka):
    """A tuple that is not a packed column (2-3 items, offsets a numpy array) holds records
    in both calls: the asyncio one produced nothing for ("x", "y") and raised for
    (b"a", None), which the sync call accepted."""
    topic = unique_topic("bc-tuples")
    create_topic(kafka, topic, 1)
    with Producer(kafka.client_config()) as p:
        assert p.produce_batch(topic, ("x", "y"), partition=0) == 2
        assert p.produce_batch(topic, (b"a", None), partition=0) == 2
        assert p.flush(30) == 0

    async def aio():
        async with AIOProducer(kafka.client_config()) as producer:
            await producer.produce_batch(topic, ("x", "y"), partition=0)
            await producer.produce_batch(topic, (b"a", None), partition=0)
            with pytest.raises(TypeError, match="values must be a list"):
                await producer.produce_batch(topic, None)

    asyncio.run(aio())
    got = read_confluent(kafka, topic, 1, 8)
    assert [g.value for g in got] == [b"x", b"y", b"a", None] * 2


def test_an_empty_asyncio_call_checks_its_arguments_as_the_sync_call(kafka):
    """With no records the asyncio call returned at once, before checking the partition or
    the topic; it now refuses what the synchronous call refuses."""
    topic = unique_topic("bc-empty")
    create_topic(kafka, topic, 1)
    with Producer(kafka.client_config()) as p:
        with pytest.raises(TypeError, match="partition"):
            p.produce_batch(topic, [], partition="0")
        assert p.produce_batch(topic, [], partition=0) == 0

    async def aio():
        async with AIOProducer(kafka.client_config()) as producer:
            with pytest.raises(TypeError, match="partition"):
                await producer.produce_batch(topic, [], partition="0")
            with pytest.raises(TypeError, match="topic"):
                await producer.produce_batch(None, [])
            await producer.produce_batch(topic, [], partition=0)

    asyncio.run(aio())
