"""``Consumer.fetch_until``: a partition is fetched only up to an offset, with Fetches sized
to the records left, so a read of a known range (Spark's range reads, one per micro-batch)
does not fetch megabytes past its end and throw them away."""

from __future__ import annotations

import time

from harness import create_topic, unique_topic

from kafka_fast import Consumer, Producer, TopicPartition

PER_PARTITION = 12_000
END = 4_000
VALUE = 1_000
SMALL = 200_000


def _value(partition: int, i: int) -> bytes:
    return b"%d:%06d:" % (partition, i) + bytes([i % 251]) * VALUE


def _fill(kafka, topic: str) -> None:
    create_topic(kafka, topic, 2)
    with Producer(kafka.client_config({"linger.ms": 20})) as p:
        for partition in (0, 1):
            assert p.produce_batch(topic, [_value(partition, i) for i in range(PER_PARTITION)],
                                   partition=partition) == PER_PARTITION
        assert p.flush(60) == 0


def _consumer(kafka, **extra) -> Consumer:
    return Consumer(kafka.client_config({
        "group.id": unique_topic("g"), "max.partition.fetch.bytes": 8 << 20,
        "fetch.wait.max.ms": 10, "enable.auto.commit": False, **extra}))


def _read(c: Consumer, want: int, timeout: float = 30.0) -> list[tuple[int, int, bytes]]:
    rows: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(rows) < want and time.monotonic() < deadline:
        view = c.consume_batch(10_000, 0.5)
        rows += [(int(view.partitions[i]), int(view.offsets[i]), view.values[i])
                 for i in range(len(view))]
    return rows


def _fetched(c: Consumer) -> int:
    return int(c.metrics()["kafka_fast_rx_messages_total"])


def test_a_bounded_range_is_read_exactly_without_fetching_far_past_it(kafka):
    topic = unique_topic("until")
    _fill(kafka, topic)
    want = sorted((p, i, _value(p, i)) for p in (0, 1) for i in range(END))

    bounded = _consumer(kafka)
    try:
        bounded.fetch_until([TopicPartition(topic, 0, END), TopicPartition(topic, 1, END)])
        bounded.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        rows = _read(bounded, 2 * END)
        while True:  # until nothing more comes: no Fetch past the ends
            view = bounded.consume_batch(10_000, 1.0)
            if not len(view):
                break
            rows += [(int(view.partitions[i]), int(view.offsets[i]), view.values[i])
                     for i in range(len(view))]
        assert sorted(r for r in rows if r[1] < END) == want
        # a Fetch returns whole batches: the rest of the batch holding the end comes too
        past = {p: [r for r in rows if r[0] == p and r[1] >= END] for p in (0, 1)}
        for p, got in past.items():
            assert got == [(p, i, _value(p, i)) for i in range(END, END + len(got))]
            assert len(got) < 1_100  # at most a batch of 1 MiB
        fetched = _fetched(bounded)
        # the first Fetch of the topic asks ~1 MiB per partition, the next what is left x1.1
        assert 2 * END <= fetched <= 1.25 * 2 * END, fetched
        # the bound removed on partition 0: it goes on after what came; partition 1 stays
        bounded.fetch_until([TopicPartition(topic, 0, -1)])
        start = END + len(past[0])
        more = _read(bounded, PER_PARTITION - start)
        assert more == [(0, i, _value(0, i)) for i in range(start, PER_PARTITION)]
    finally:
        bounded.close()

    # the same read without the bound: the first 8 MiB Fetch of each partition brings ~8,000
    # records of 1 KB, and the next one is sent before the reader has seen the first
    unbounded = _consumer(kafka)
    try:
        unbounded.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        rows = []
        deadline = time.monotonic() + 30
        while len([r for r in rows if r[1] < END]) < 2 * END and time.monotonic() < deadline:
            rows += _read(unbounded, 1, timeout=1.0)
        assert sorted(r for r in rows if r[1] < END) == want
        assert _fetched(unbounded) > 1.5 * 2 * END
    finally:
        unbounded.close()


def test_a_batch_larger_than_a_bounded_fetch_is_still_read(kafka):
    """A batch bigger than a bounded Fetch's size comes back cut short when its partition is
    not the first of the response: the next Fetch of that partition asks for the full
    ``max.partition.fetch.bytes``, so the batch comes with that Fetch rather than once the
    partitions before it have nothing left. Without fetch sessions (where the broker moves a
    partition that returned records behind the others) every Fetch lists the partitions in
    the same order."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = unique_topic("until-big")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    (future,) = admin.create_topics([NewTopic(topic, 2, config={
        "max.message.bytes": str(4 << 20)})]).values()
    future.result(30)
    big = b"B" * (5 << 19)  # 2.5 MiB: more than the first bounded Fetch asks for
    small = [b"small-%06d" % i + b"s" * 100 for i in range(SMALL)]
    with Producer(kafka.client_config({"message.max.bytes": 4 << 20})) as p:
        # partition 0 (first in every Fetch) has records to fetch in every Fetch of the read
        assert p.produce_batch(topic, small, partition=0) == SMALL
        p.produce(topic, big, partition=1)
        for i in range(3):
            p.produce(topic, b"after-%d" % i, partition=1)
        assert p.flush(60) == 0
    c = _consumer(kafka, **{"fetch.sessions": False})
    try:
        c.fetch_until([TopicPartition(topic, 0, SMALL), TopicPartition(topic, 1, 4)])
        c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        rows = _read(c, SMALL + 4)
        assert [r for r in rows if r[0] == 1] == [(1, 0, big)] + [
            (1, i + 1, b"after-%d" % i) for i in range(3)]
        assert [r for r in rows if r[0] == 0] == [(0, i, small[i]) for i in range(SMALL)]
        # the big batch came while partition 0 (~24 MB, 8 MiB a Fetch at most) was still
        # being read, not only once partition 0 stopped answering first
        assert rows.index((1, 0, big)) < rows.index((0, SMALL - 1, small[-1]))
    finally:
        c.close()
