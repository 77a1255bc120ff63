"""Records produced by independent clients read back exactly: assign, subscribe, consume,
consume_batch, seek, pause/resume, watermarks, EOF events and read_committed interop."""

from __future__ import annotations

import subprocess
import time

import pytest
from consumer_support import as_tuple, make_items, produce_confluent, read_all
from harness import create_topic, unique_topic
from harness.peers import missing

from kafka_fast import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def consumer(broker, **extra) -> Consumer:
    conf = broker.client_config({"group.id": unique_topic("g"), "auto.offset.reset": "earliest",
                                 "fetch.wait.max.ms": 100})
    conf.update(extra)
    return Consumer(conf)


@pytest.mark.parametrize("codec", CODECS)
def test_assign_reads_exact_records_and_batch_columns(broker, codec):
    topic = unique_topic("rt")
    create_topic(broker, topic, 3)
    expected = produce_confluent(broker, topic, make_items(150, 3, codec),
                                 {"compression.type": codec})
    c = consumer(broker)
    try:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = read_all(c, len(expected))
        assert sorted(as_tuple(m) for m in got) == expected
        assert {m.topic() for m in got} == {topic}
        positions = {tp.partition: tp.offset for tp in c.position(
            [TopicPartition(topic, p) for p in range(3)])}
        last = {}
        for part, offset, *_ in expected:
            last[part] = offset + 1
        assert positions == last

        # The same records again as columns.
        for p in range(3):
            c.seek(TopicPartition(topic, p, OFFSET_BEGINNING))
        rows = []
        deadline = time.monotonic() + 20
        while len(rows) < len(expected) and time.monotonic() < deadline:
            view = c.consume_batch(100_000, 0.5, headers=True)
            assert view.topic in (topic, None)
            for i in range(len(view)):
                rows.append((int(view.partitions[i]), int(view.offsets[i]), view.keys[i],
                             view.values[i], view.headers[i], int(view.timestamps[i])))
        assert sorted(rows) == expected
        table = view.to_arrow()
        assert table.num_rows == len(view)
    finally:
        c.close()


def test_consume_batch_joins_batches_and_a_kept_view_never_changes(real_broker):
    """Views of several fetched batches each hold exactly their records, and the first view,
    kept while everything is read again, keeps its records. (Real brokers: the mock
    cluster's Fetch answers gave no view several batches to join.)"""
    broker = real_broker
    topic = unique_topic("keep")
    create_topic(broker, topic, 1)
    n = 12_000
    values = [b"%06d" % i + bytes([i % 251]) * (i % 150) for i in range(n)]
    keys = [None if i % 9 == 0 else b"key-%d" % i for i in range(n)]
    with Producer(broker.client_config({"batch.size": 100_000, "linger.ms": 50})) as p:
        assert p.produce_batch(topic, values, keys=keys, timestamps=[
            1_700_000_000_000 + i for i in range(n)]) == n
        assert p.flush(30) == 0
    c = consumer(broker)
    try:
        c.assign([TopicPartition(topic, 0)])
        views = []
        deadline = time.monotonic() + 30
        while sum(map(len, views)) < n and time.monotonic() < deadline:
            view = c.consume_batch(2_500, 1.0)
            if len(view):
                views.append(view)
        first = views[0]
        first_rows = [first.values[i] for i in range(len(first))]
        assert max(map(len, views)) > 1_400, "no view joined several batches"
        rows = [(int(v.offsets[i]), v.keys[i], v.values[i], int(v.timestamps[i]))
                for v in views for i in range(len(v))]
        del views, view
        # more views, while the first is still held
        c.seek(TopicPartition(topic, 0, OFFSET_BEGINNING))
        again = 0
        while again < n and time.monotonic() < deadline:
            again += len(c.consume_batch(2_500, 1.0))
        assert again == n
        assert [first.values[i] for i in range(len(first))] == first_rows
        assert first.offsets.tolist() == list(range(len(first)))
    finally:
        c.close()
    assert rows == [(i, keys[i], values[i], 1_700_000_000_000 + i) for i in range(n)]


def test_subscribe_and_consume_read_exact_records(broker):
    topic = unique_topic("sub")
    create_topic(broker, topic, 3)
    expected = produce_confluent(broker, topic, make_items(120, 3))
    c = consumer(broker, **{"group.id": unique_topic("g"), "session.timeout.ms": 6000,
                            "heartbeat.interval.ms": 500})
    try:
        assigned = []
        c.subscribe([topic], on_assign=lambda cons, parts: assigned.extend(parts))
        got = read_all(c, len(expected), how="consume")
        assert sorted(as_tuple(m) for m in got) == expected
        assert sorted(tp.partition for tp in assigned) == [0, 1, 2]
        assert c.memberid()
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
        ends = {}
        for part, offset, *_ in expected:
            ends[part] = offset + 1
        assert {tp.partition: tp.offset for tp in committed} == ends
    finally:
        c.close()
    with pytest.raises(RuntimeError):
        c.poll(0)


def test_subscribe_by_regex(broker):
    prefix = unique_topic("rx")
    topics = [f"{prefix}-a", f"{prefix}-b"]
    for t in topics:
        create_topic(broker, t, 1)
    expected = {t: produce_confluent(broker, t, make_items(20, 1, t)) for t in topics}
    c = consumer(broker, **{"group.id": unique_topic("g"), "session.timeout.ms": 6000,
                            "heartbeat.interval.ms": 500})
    try:
        c.subscribe([f"^{prefix}-.*"])
        got = read_all(c, 40)
        for t in topics:
            assert sorted(as_tuple(m) for m in got if m.topic() == t) == expected[t]
    finally:
        c.close()


def test_seek_pause_resume_eof_and_watermarks(broker):
    topic = unique_topic("seek")
    create_topic(broker, topic, 1)
    expected = produce_confluent(broker, topic, make_items(50, 1))
    c = consumer(broker, **{"enable.partition.eof": True})
    tp = TopicPartition(topic, 0)
    try:
        c.assign([TopicPartition(topic, 0, 10)])
        first = read_all(c, 5)
        assert [m.offset() for m in first] == [10, 11, 12, 13, 14]
        c.pause([tp])
        assert c.poll(0.3) is None
        c.resume([tp])
        rest = read_all(c, 35)
        assert [m.offset() for m in rest] == list(range(15, 50))
        # Exactly one end-of-partition event, at the end offset.
        eof = None
        deadline = time.monotonic() + 10
        while eof is None and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None:
                assert msg.error() is not None
                eof = msg
        assert eof.error().code() == -191 and eof.offset() == 50 and eof.partition() == 0
        assert c.position([tp])[0].offset == 50
        low, high = c.get_watermark_offsets(tp, timeout=10)
        assert low == 0 and high >= 1
        assert c.get_watermark_offsets(tp, cached=True)[1] >= 1
        c.seek(TopicPartition(topic, 0, 47))
        assert [as_tuple(m) for m in read_all(c, 3)] == expected[47:]
        # Timestamp look-ups differ per broker (Tansu answers per batch, the mock cluster
        # does not implement them): the answer must be the one librdkafka gets.
        from confluent_kafka import Consumer as CConsumer
        from confluent_kafka import TopicPartition as CTopicPartition

        ref = CConsumer(broker.client_config({"group.id": "ref"}))
        try:
            theirs = ref.offsets_for_times([CTopicPartition(topic, 0, expected[20][5])], 10)
        finally:
            ref.close()
        times = c.offsets_for_times([TopicPartition(topic, 0, expected[20][5])], timeout=10)
        assert times[0].offset == theirs[0].offset
    finally:
        c.close()


def test_kcat_produced_records_read_back(mock_cluster, kcat, tmp_path):
    kcat = kcat or missing("kcat")
    topic = unique_topic("kcat")
    create_topic(mock_cluster, topic, 1)
    lines = [f"k{i}:value-{i}" for i in range(30)]
    subprocess.run([kcat, "-b", mock_cluster.bootstrap, "-P", "-t", topic, "-p", "0", "-K:",
                    "-z", "lz4"], input="\n".join(lines) + "\n", text=True, check=True,
                   timeout=30, capture_output=True)
    c = consumer(mock_cluster)
    try:
        c.assign([TopicPartition(topic, 0)])
        got = read_all(c, 30)
        assert [(m.offset(), m.key(), m.value()) for m in got] == [
            (i, f"k{i}".encode(), f"value-{i}".encode()) for i in range(30)]
    finally:
        c.close()


def test_read_committed_matches_confluent(broker):
    from confluent_kafka import Consumer as CConsumer
    from confluent_kafka import Producer as CProducer
    from confluent_kafka import TopicPartition as CTopicPartition

    topic = unique_topic("txn")
    create_topic(broker, topic, 1)
    producer = CProducer(broker.client_config({"transactional.id": unique_topic("tx"),
                                               "linger.ms": 5}))
    producer.init_transactions(20)
    for tag, commit in (("a", True), ("b", False), ("c", True)):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, value=f"{tag}{i}".encode(), partition=0)
        producer.flush(20)
        if commit:
            producer.commit_transaction(20)
        else:
            producer.abort_transaction(20)

    def theirs():
        cc = CConsumer(broker.client_config({"group.id": unique_topic("g"),
                                             "isolation.level": "read_committed",
                                             "enable.partition.eof": True,
                                             "auto.offset.reset": "earliest"}))
        cc.assign([CTopicPartition(topic, 0, -2)])
        out = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = cc.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                break
            out.append((msg.offset(), msg.value()))
        cc.close()
        return out

    reference = theirs()
    assert [v for _, v in reference if v.startswith(b"a") or v.startswith(b"c")] == [
        b"a0", b"a1", b"a2", b"a3", b"a4", b"c0", b"c1", b"c2", b"c3", b"c4"]
    c = consumer(broker, **{"enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0)])
        ours = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                break
            ours.append((msg.offset(), msg.value()))
        assert ours == reference
    finally:
        c.close()


def test_invalid_arguments_are_named(broker):
    with pytest.raises(Exception, match="partition.assignment.strategy"):
        Consumer(broker.client_config({"group.id": "g",
                                       "partition.assignment.strategy": "sticky"}))
    with pytest.raises(ValueError, match="group.id must be set"):
        Consumer(broker.client_config())
    c = consumer(broker)
    try:
        with pytest.raises(KafkaException, match="not assigned"):
            c.seek(TopicPartition("nope", 0, 1))
        with pytest.raises(ValueError):
            c.consume(-1)
    finally:
        c.close()


def test_mixing_poll_consume_and_consume_batch_delivers_each_record_once(broker):
    topic = unique_topic("mix")
    create_topic(broker, topic, 1)
    expected = produce_confluent(broker, topic, make_items(300, 1))
    c = consumer(broker)
    try:
        c.assign([TopicPartition(topic, 0)])
        rows = [as_tuple(m) for m in read_all(c, 5)]
        view = c.consume_batch(50, 5.0, headers=True)
        rows += [as_tuple(m) for m in view]
        rows += [as_tuple(m) for m in c.consume(20, 5.0)]
        assert c.position([TopicPartition(topic, 0)])[0].offset == len(rows)
        while len(rows) < 300:
            view = c.consume_batch(1000, 5.0, headers=True)
            assert len(view), "records missing"
            rows += [as_tuple(m) for m in view]
        assert rows == expected
        assert c.position([TopicPartition(topic, 0)])[0].offset == 300
    finally:
        c.close()
