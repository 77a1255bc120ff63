"""Records produced by kafka_fast read back by confluent-kafka and kcat, exactly."""

from __future__ import annotations

import os

import pytest
from harness.peers import missing
from harness.topics import create_topic, unique_topic
from readback import Got, read_confluent, read_kcat

from kafka_fast import TIMESTAMP_CREATE_TIME, Producer

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BIG = 1024 * 1024


def _records(big: bool) -> list[tuple]:
    """(partition, key, value, headers, timestamp) with every field shape."""
    base_ts = 1_700_000_000_000
    recs = [
        (0, b"key-0", b"value-0", [("h1", b"a"), ("h2", None)], base_ts),
        (0, None, b"null key", [], base_ts + 1),
        (0, b"null value", None, [("only", b"")], base_ts + 2),
        (1, None, None, [], base_ts + 3),
        (1, b"", b"", [("dup", b"1"), ("dup", b"2")], base_ts + 4),
        (1, "text key", "text value \u00e9", {"n": "v"}, base_ts + 5),
    ]
    recs += [(i % 2, b"k%03d" % i, os.urandom(50 + i), [("i", b"%d" % i)], base_ts + 10 + i)
             for i in range(40)]
    if big:
        recs.append((0, b"big", os.urandom(BIG), [("size", b"1MiB")], base_ts + 100))
    return recs


def _expected(recs: list[tuple]) -> list[tuple]:
    out = {0: [], 1: []}
    for p, k, v, h, ts in recs:
        k = k.encode() if isinstance(k, str) else k
        v = v.encode() if isinstance(v, str) else v
        h = [(a, b.encode() if isinstance(b, str) else b)
             for a, b in (h.items() if isinstance(h, dict) else h)]
        out[p].append((p, k, v, tuple(h), ts))
    return [Got(p, off, k, v, h, ts) for p in (0, 1) for off, (p, k, v, h, ts) in
            enumerate(out[p])]


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_field_and_codec(broker, codec):
    topic = unique_topic(f"rt-{codec}")
    create_topic(broker, topic, 2)
    recs = _records(big=codec in ("none", "zstd"))
    reports = []
    conf = broker.client_config({"compression.type": codec, "message.max.bytes": 2_000_000,
                                 "linger.ms": 20})
    with Producer(conf) as p:
        for part, k, v, h, ts in recs:
            p.produce(topic, v, k, partition=part, timestamp=ts, headers=h,
                      on_delivery=lambda err, msg: reports.append((err, msg)))
        assert p.flush(30) == 0
        # Compressed batches of produce() are built on the encoder threads, not the I/O thread.
        assert (p._bulk.encoder is not None) == (codec != "none")
    assert [err for err, _ in reports] == [None] * len(recs)
    want = _expected(recs)
    # Delivery reports carry the exact record, its partition and offset. (The mock cluster
    # answers with a log-append time, which the report then carries, as librdkafka's does.)
    by_pos = sorted((m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()),
                     m.timestamp()[1] if m.timestamp()[0] == TIMESTAMP_CREATE_TIME else None)
                    for _, m in reports)
    assert by_pos == [g[:5] + (None if broker.kind == "mock" else g[5],) for g in want]
    assert read_confluent(broker, topic, 2, len(recs)) == want


def test_kcat_reads_what_we_produce(mock_cluster, kcat):
    kcat = kcat or missing("kcat")
    topic = unique_topic("rt-kcat")
    create_topic(mock_cluster, topic, 1)
    with Producer(mock_cluster.client_config({"compression.type": "lz4"})) as p:
        for i in range(25):
            p.produce(topic, b"value-%d" % i, b"key-%d" % i, partition=0,
                      timestamp=1_700_000_000_000 + i, headers=[("n", b"%d" % i)])
        assert p.flush(30) == 0
    lines = read_kcat(kcat, mock_cluster, topic, 0, 25)
    assert lines == [b"0|%d|key-%d|value-%d|n=%d|%d" % (i, i, i, i, 1_700_000_000_000 + i)
                     for i in range(25)]


def test_default_partitioner_places_keys_like_confluent_murmur2_random(broker):
    """1,000 keys: our partition equals confluent-kafka's with partitioner=murmur2_random."""
    from confluent_kafka import Producer as CProducer

    topic = unique_topic("murmur")
    create_topic(broker, topic, 7)
    keys = [b"user-%d" % i for i in range(1000)]
    theirs: dict[bytes, int] = {}
    cp = CProducer(broker.client_config({"partitioner": "murmur2_random", "linger.ms": 5}))
    for k in keys:
        cp.produce(topic, b"c", k, on_delivery=lambda e, m: theirs.__setitem__(m.key(),
                                                                            m.partition()))
    assert cp.flush(30) == 0
    ours: dict[bytes, int] = {}
    with Producer(broker.client_config()) as p:
        for k in keys:
            p.produce(topic, b"k", k, on_delivery=lambda e, m: ours.__setitem__(m.key(),
                                                                              m.partition()))
        assert p.flush(30) == 0
    assert len(theirs) == 1000
    assert ours == theirs


def test_reports_of_records_mixed_with_unreported_ones(broker):
    """Records with and without a callback share batches: each report names its own record's
    offset, value and timestamp."""
    topic = unique_topic("mixed")
    create_topic(broker, topic, 1)
    reports = []
    with Producer(broker.client_config({"linger.ms": 50})) as p:
        p.list_topics(topic, 10)
        for i in range(300):
            cb = (lambda e, m: reports.append((m.offset(), m.value(), m.headers()))) \
                if i % 3 == 1 else None
            p.produce(topic, b"m%03d" % i, timestamp=1_700_000_000_000 + i if i % 2 else 0,
                      headers=[("i", b"%d" % i)] if i % 5 == 0 else None, on_delivery=cb)
        assert p.flush(30) == 0
    assert reports == [(i, b"m%03d" % i, [("i", b"%d" % i)] if i % 5 == 0 else None)
                       for i in range(300) if i % 3 == 1]
    got = read_confluent(broker, topic, 1, 300)
    assert [(g.offset, g.value) for g in got] == [(i, b"m%03d" % i) for i in range(300)]
    assert all(g.timestamp == 1_700_000_000_000 + g.offset for g in got if g.offset % 2)


def test_offsets_reported_for_several_topics_and_partitions_are_where_records_are(kafka):
    """One request per pass carries batches of two topics' six partitions; the offsets the
    responses gave each record (read in compiled code when every partition succeeds) are
    those a reference consumer finds them at."""
    topics = [unique_topic("wire") for _ in range(2)]
    for topic in topics:
        create_topic(kafka, topic, 3)
    reports: list = []
    with Producer(kafka.client_config({"linger.ms": 20})) as p:
        for round_ in range(3):
            for i in range(60):
                p.produce(topics[i % 2], b"v-%d-%d" % (round_, i), b"k%d" % i,
                          partition=i % 3, on_delivery=lambda e, m: reports.append(
                              (e, m.topic(), m.partition(), m.offset(), m.value())))
            assert p.flush(30) == 0
    assert all(r[0] is None for r in reports)
    reported = sorted(r[1:] for r in reports)
    found = sorted((topic, g.partition, g.offset, g.value) for topic in topics
                   for g in read_confluent(kafka, topic, 3, 90))
    assert reported == found
    assert len(found) == 180


def test_acks_0_completes_once_written(kafka):
    """With acks=0 the broker sends no answer: each record is reported delivered once its
    request is written, and the records are in the topic."""
    topic = unique_topic("acks0")
    create_topic(kafka, topic, 2)
    reports: list = []
    with Producer(kafka.client_config({"acks": 0, "enable.idempotence": False})) as p:
        for i in range(20):
            p.produce(topic, b"v%d" % i, b"k%d" % i, partition=i % 2,
                      on_delivery=lambda e, m: reports.append((e, m.partition(), m.value())))
        assert p.flush(10) == 0
    assert sorted(reports) == sorted((None, i % 2, b"v%d" % i) for i in range(20))
    got = read_confluent(kafka, topic, 2, 20)
    assert [(g.partition, g.key, g.value) for g in got] == [
        (p, b"k%d" % i, b"v%d" % i) for p in (0, 1) for i in range(p, 20, 2)]
