"""Follower fetching (KIP-392) on a real 3-broker Apache Kafka cluster whose brokers sit in
racks rack-a, rack-b and rack-c and whose leaders use RackAwareReplicaSelector.

A consumer with ``client.rack`` set to a follower's rack is told by the leader to read from
that follower and does; when the follower stops, it goes back to the leader and still reads
every record exactly once, in order. A consumer without a rack reads from the leader.

Which broker each Fetch went to, and how many record bytes each broker returned, is seen at
the consumer's client boundary: its ``send`` is wrapped to note every request on the fetch
lane and the size of the records in the answer.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter

import pytest
from harness import create_topic, unique_topic
from harness.apache_kafka import RACKS, ApacheKafka
from harness.topics import wait_for_topic

from kafka_fast import Consumer, Producer, TopicPartition
from kafka_fast.net.lanes import Lane
from kafka_fast.topic_partition import OFFSET_BEGINNING

pytestmark = [pytest.mark.apache, pytest.mark.timeout(240)]


class FetchLog:
    """Fetch requests per broker and record bytes answered per broker, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[int] = []  # node of every Fetch, in sending order
        self.record_bytes: Counter[int] = Counter()
        self.mark = 0  # index into sent / snapshot of record_bytes at mark()
        self.bytes_at_mark: Counter[int] = Counter()

    def watch(self, consumer: Consumer) -> None:
        client = consumer._client  # the consumer's KafkaClient (its network boundary)
        send = client.send

        def counting_send(node, request, **kw):
            fut = send(node, request, **kw)
            if kw.get("lane") == Lane.FETCH:
                with self.lock:
                    self.sent.append(node)
                fut.add_done_callback(lambda f: self._answered(node, f))
            return fut

        client.send = counting_send

    def _answered(self, node: int, fut) -> None:
        if fut.exception() is not None:
            return
        wire = fut.result()  # the response in columns (consumer.fetch_wire)
        size = 0
        for i in range(len(wire)):
            records = wire.records(i)
            size += 0 if records is None else len(records)
        with self.lock:
            self.record_bytes[node] += size

    def set_mark(self) -> None:
        with self.lock:
            self.mark = len(self.sent)
            self.bytes_at_mark = Counter(self.record_bytes)

    def since_mark(self) -> tuple[list[int], Counter[int]]:
        with self.lock:
            return list(self.sent[self.mark:]), self.record_bytes - self.bytes_at_mark


def produce(cluster: ApacheKafka, topic: str, values: list[bytes], pace: float = 0.0) -> None:
    errors: list = []
    conf = cluster.client_config({"acks": "all", "linger.ms": 5, "message.timeout.ms": 60000})
    with Producer(conf) as p:
        for value in values:
            p.produce(topic, value, partition=0,
                      on_delivery=lambda err, msg: err is not None and errors.append(err))
            if pace:
                p.poll(0)
                time.sleep(pace)
        assert p.flush(60) == 0
    assert not errors, errors[:3]


def consume_until(consumer: Consumer, got: list[tuple[int, bytes]], count: int,
                  timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msg in consumer.consume(500, 0.2):
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.value()))


def replicas_of(cluster: ApacheKafka, topic: str) -> tuple[int, list[int]]:
    """Partition 0's leader and its in-sync followers."""
    from confluent_kafka.admin import AdminClient

    isr = cluster.wait_in_sync(topic)[0]
    leader = wait_for_topic(cluster, topic, 1)[0]
    md = AdminClient(cluster.client_config()).list_topics(topic, timeout=10)
    assert sorted(md.topics[topic].partitions[0].replicas) == [1, 2, 3]
    return leader, [n for n in isr if n != leader]


def new_topic(cluster: ApacheKafka, tag: str) -> str:
    topic = unique_topic(tag)
    create_topic(cluster, topic, 1, replication_factor=3)
    cluster.wait_in_sync(topic)
    return topic


def reader(cluster: ApacheKafka, topic: str, **extra) -> Consumer:
    conf = cluster.client_config({"group.id": f"reader-{topic}", "enable.auto.commit": False,
                                  "fetch.wait.max.ms": 100, **extra})
    return Consumer(conf)


def values(tag: str, start: int, stop: int) -> list[bytes]:
    return [f"{tag}-{i}".encode() for i in range(start, stop)]


def test_consumer_in_a_followers_rack_reads_from_it_then_falls_back_to_the_leader(
        apache_rack_cluster):
    cluster = apache_rack_cluster
    topic = new_topic(cluster, "follow")
    first = values("v", 0, 300)
    produce(cluster, topic, first)
    leader, followers = replicas_of(cluster, topic)
    assert followers, "no in-sync follower"
    follower = followers[0]
    log = FetchLog()
    consumer = reader(cluster, topic, **{"client.rack": RACKS[follower]})
    try:
        log.watch(consumer)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[tuple[int, bytes]] = []
        consume_until(consumer, got, len(first), 60)
        assert got == list(enumerate(first))
        sent, got_bytes = log.since_mark()
        # The leader named the follower (answering without records); every Fetch after
        # that went to the follower, and all records came from it.
        assert sent[0] == leader and follower in sent, sent
        switch = sent.index(follower)
        assert set(sent[switch:]) == {follower}, sent
        assert got_bytes[follower] > 0 and got_bytes[leader] == 0, got_bytes

        # More records while the follower stops (controlled shutdown), and more once it is
        # down (these can only come from the leader): the consumer goes back to the leader
        # and misses nothing.
        more = values("v", 300, 600)
        producer = threading.Thread(target=produce, args=(cluster, topic, more[:100], 0.005))
        producer.start()
        try:
            consume_until(consumer, got, 400, 60)
            assert len(got) >= 400
            cluster.stop_node(follower, signal.SIGTERM)
            log.set_mark()
        finally:
            producer.join(90)
        assert not producer.is_alive()
        produce(cluster, topic, more[100:])
        consume_until(consumer, got, len(first) + len(more), 90)
        assert [o for o, _ in got] == list(range(600)), "gaps, duplicates or reordering"
        assert got == list(enumerate(first + more))
        sent, got_bytes = log.since_mark()
        assert follower not in sent[3:], sent  # at most an attempt or two before failing
        assert leader in sent and got_bytes[leader] > 0, (sent, got_bytes)
        # Nothing more arrives (every record was read exactly once).
        extra: list = []
        consume_until(consumer, extra, 1, 1.0)
        assert extra == []
    finally:
        consumer.close()


@pytest.mark.parametrize("rack", ["none", "leader's"])
def test_consumer_without_a_rack_or_in_the_leaders_rack_reads_from_the_leader(
        apache_rack_cluster, rack):
    cluster = apache_rack_cluster
    topic = new_topic(cluster, "leader" if rack == "none" else "samerack")
    records = values("w", 0, 200)
    produce(cluster, topic, records)
    leader, _ = replicas_of(cluster, topic)
    log = FetchLog()
    extra = {} if rack == "none" else {"client.rack": RACKS[leader]}
    consumer = reader(cluster, topic, **extra)
    try:
        log.watch(consumer)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        got: list[tuple[int, bytes]] = []
        consume_until(consumer, got, len(records), 60)
        assert got == list(enumerate(records))
        sent, got_bytes = log.since_mark()
        assert set(sent) == {leader}, sent
        assert set(got_bytes) == {leader} and got_bytes[leader] > 0, got_bytes
    finally:
        consumer.close()
