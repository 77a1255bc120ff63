"""Fetch responses read into columns (``kafka_fast.consumer.fetch_wire``): the compiled reader
and its pure-Python twin give the generated codec's fields for every Fetch version the
consumer sends, refuse truncated and garbled bytes with a ProtocolError as the codec does,
and read Apache Kafka's real answers (aborted transactions included) through the consumer."""

from __future__ import annotations

import importlib
import random
import struct
import uuid

import pytest
from harness import create_topic, unique_topic

from kafka_fast import Consumer, Producer, TopicPartition
from kafka_fast._impl import FORCED_PURE
from kafka_fast.consumer.fetch_wire import MessageWire, decode_fetch
from kafka_fast.consumer.fetch_wire import plain as plain_rows
from kafka_fast.consumer.fetcher import FETCH_MAX_VERSION
from kafka_fast.errors import ProtocolError
from kafka_fast.protocol import messages as m
from kafka_fast.records import encode_batch

R = m.FetchResponse
PD = R.PartitionData
AT = PD.AbortedTransaction
VERSIONS = range(R.MIN_VERSION, FETCH_MAX_VERSION + 1)
IMPLS = ["kafka_fast._pure.fetchwire"] + ([] if FORCED_PURE else ["kafka_fast._native._fetchwire"])


@pytest.fixture(params=IMPLS)
def wire(request):
    return importlib.import_module(request.param)


def rows_of_message(resp, version: int) -> tuple:
    """The generated codec's fields, in the columns' order."""
    rows = []
    for topic in resp.responses:
        name = topic.topic_id if version >= 13 else topic.topic
        for pd in topic.partitions:
            rows.append((name, pd.partition_index, pd.error_code, pd.high_watermark,
                         pd.last_stable_offset, pd.log_start_offset, pd.preferred_read_replica,
                         None if pd.records is None else bytes(pd.records),
                         None if pd.aborted_transactions is None else
                         [(a.producer_id, a.first_offset) for a in pd.aborted_transactions]))
    return (resp.throttle_time_ms, resp.error_code, resp.session_id), rows


def batch(base: int, n: int) -> bytes:
    return encode_batch([b"v%d" % (base + i) for i in range(n)], [b"k%d" % i for i in range(n)],
                        timestamps=[1_000 + i for i in range(n)], base_offset=base)


def response(version: int, seed: int = 0) -> R:
    """Three topics of several partitions: errors, null/empty/full records, aborted
    transactions (null, empty, several), read replicas, every field the version has."""
    rnd = random.Random(seed)
    topics = []
    for t in range(3):
        parts = []
        for p in range(t + 2):
            aborted = [None, [], [AT(producer_id=rnd.randrange(1 << 40), first_offset=k * 7)
                                  for k in range(p + 1)]][(t + p) % 3]
            parts.append(PD(
                partition_index=p * 3 + t, error_code=[0, 0, 1, 6][(t + p) % 4],
                high_watermark=rnd.randrange(1 << 50), last_stable_offset=rnd.randrange(-1, 1 << 50),
                log_start_offset=rnd.randrange(-1, 1000) if version >= 5 else -1,
                aborted_transactions=aborted,
                preferred_read_replica=rnd.randrange(-1, 4) if version >= 11 else -1,
                records=[None, b"", batch(p * 10, p + 1)][(t * 2 + p) % 3]))
        name = {"topic_id": uuid.UUID(int=rnd.getrandbits(128))} if version >= 13 else {
            "topic": f"topic-{t}-é"}
        topics.append(R.FetchableTopicResponse(partitions=parts, **name))
    return R(throttle_time_ms=rnd.randrange(1000), error_code=0,
             session_id=rnd.randrange(1 << 30) if version >= 7 else 0, responses=topics)


@pytest.mark.parametrize("version", VERSIONS)
def test_columns_equal_the_generated_codec_for_every_version(wire, version):
    for seed in range(3):
        body = response(version, seed).encode(version)
        expected = rows_of_message(R.decode(body, version), version)
        w = wire.parse_fetch(body, version)
        assert w is not None and w.version == version
        assert plain_rows(w) == expected
        assert len(w) == len(expected[1]) >= 9
        assert len(w.topics) == 3
        # records are views of the response, not copies
        for i in range(len(w)):
            records = w.records(i)
            if records is not None:
                assert records.obj is body
                assert w.records_len[i] == len(records)
                assert body[w.records_pos[i]:w.records_pos[i] + w.records_len[i]] == records
    # the top-level error and session id, and a response without partitions
    empty = R(throttle_time_ms=7, error_code=70 if version >= 7 else 0,
              session_id=12 if version >= 7 else 0, responses=[]).encode(version)
    w = wire.parse_fetch(bytearray(empty), version)
    assert (w.throttle_time_ms, w.error_code, w.session_id, len(w), w.topics) == (
        7, 70 if version >= 7 else 0, 12 if version >= 7 else 0, 0, [])


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 12])
def test_tagged_fields_go_to_the_generated_codec(wire, version):
    resp = response(version)
    pd = resp.responses[1].partitions[0]
    pd.current_leader = PD.LeaderIdAndEpoch(leader_id=3, leader_epoch=9)
    pd.diverging_epoch = PD.EpochEndOffset(epoch=4, end_offset=100)
    body = resp.encode(version)
    assert wire.parse_fetch(body, version) is None
    got = decode_fetch(body, version)
    assert isinstance(got, MessageWire)
    assert plain_rows(got) == rows_of_message(R.decode(body, version), version)
    if version >= 16:
        resp = response(version)
        resp.node_endpoints = [R.NodeEndpoint(node_id=3, host="h", port=1, rack=None)]
        body = resp.encode(version)
        assert wire.parse_fetch(body, version) is None
        assert plain_rows(decode_fetch(body, version)) == rows_of_message(
            R.decode(body, version), version)
    # Tagged fields the fetcher does not use are skipped: unknown ones of a topic, a
    # partition or the response.
    resp = response(version)
    resp.responses[0].unknown_tagged_fields = [(5, b"xyz")]
    resp.responses[1].partitions[1].unknown_tagged_fields = [(7, b"")]
    resp.unknown_tagged_fields = [(9, b"\x01\x02")]
    body = resp.encode(version)
    assert plain_rows(wire.parse_fetch(body, version)) == rows_of_message(
        R.decode(body, version), version)


@pytest.mark.parametrize("version", [16, 17, 18])
def test_an_empty_node_endpoints_array_is_read_in_columns(wire, version):
    """Tansu sends one in every v16+ answer; it is the field's default."""
    body = bytearray(response(version).encode(version))
    assert body[-1] == 0
    body[-1:] = b"\x01\x00\x01\x01"  # one tagged field: node endpoints (tag 0), empty
    assert R.decode(bytes(body), version).node_endpoints == []
    w = wire.parse_fetch(bytes(body), version)
    assert w is not None
    assert plain_rows(w) == rows_of_message(R.decode(bytes(body), version), version)
    body[-1:] = b"\x00"  # a null array where none may be
    with pytest.raises(ProtocolError, match="null node endpoints"):
        wire.parse_fetch(bytes(body), version)
    with pytest.raises(ProtocolError):
        R.decode(bytes(body), version)


def outcome(parse, body: bytes, version: int):
    """What decoding ``body`` gives: ("error", message) or the rows."""
    try:
        w = parse(body, version)
        if w is None:
            w = MessageWire(R.decode(body, version), version)
    except ProtocolError as exc:
        return "error", str(exc)
    return plain_rows(w)


def generated(body: bytes, version: int):
    try:
        return rows_of_message(R.decode(body, version), version)
    except ProtocolError:
        return "error"


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_is_refused(wire, version):
    body = response(version, 1).encode(version)
    for n in range(len(body)):
        with pytest.raises(ProtocolError, match=rf"FetchResponse v{version}: "):
            wire.parse_fetch(body[:n], version)


@pytest.mark.parametrize("version", VERSIONS)
def test_garbled_bytes_are_refused_or_read_as_the_codec_reads_them(version):
    """Random byte changes, insertions and deletions: each reader raises ProtocolError
    exactly when the generated codec does, with the same message in both twins, and
    otherwise gives the codec's fields."""
    parsers = [importlib.import_module(name).parse_fetch for name in IMPLS]
    rnd = random.Random(version)
    base = response(version, 2).encode(version)
    errors = 0
    for _ in range(300):
        body = bytearray(base)
        for _ in range(rnd.randrange(1, 4)):
            pos = rnd.randrange(len(body))
            op = rnd.randrange(4)
            if op < 2:
                body[pos] = rnd.randrange(256)
            elif op == 2:
                body.insert(pos, rnd.choice((0, 0x7F, 0x80, 0xFF, rnd.randrange(256))))
            else:
                del body[pos]
        data = bytes(body)
        want = generated(data, version)
        got = [outcome(parse, data, version) for parse in parsers]
        if want == "error":
            errors += 1
            assert all(g[0] == "error" for g in got), got
            assert len({g[1] for g in got}) == 1  # the twins say the same
        else:
            assert all(g == want for g in got)
    assert errors > 50  # the changes did hit the structure


def test_versions_outside_the_range_are_refused(wire):
    with pytest.raises(ValueError, match="FetchResponse v3"):
        wire.parse_fetch(b"", 3)
    with pytest.raises(ValueError, match="FetchResponse v19"):
        wire.parse_fetch(b"", 19)


def capture_fetches(consumer, captured: list) -> None:
    """Keep a copy of every Fetch answer ``consumer`` reads, with its version."""
    client = consumer._client
    send = client.send

    def capturing(node, request, **kw):
        decode = getattr(request, "decode_response", None)
        if request.API_KEY == m.FetchRequest.API_KEY and decode is not None:
            def keep(body, version, nogil_bytes=-1, decode=decode):
                captured.append((bytes(body), version))
                return decode(body, version, nogil_bytes)
            request.decode_response = keep
        return send(node, request, **kw)

    client.send = capturing


def test_tansu_answers_are_read_in_columns_through_the_consumer(tansu):
    """Tansu's answers (v17, with an empty node endpoints array) take the column path."""
    topic = unique_topic("fetchwire-t")
    create_topic(tansu, topic, 2)
    p = Producer(tansu.client_config({"linger.ms": 2}))
    for i in range(20):
        p.produce(topic, b"v%d" % i, partition=i % 2)
    assert p.flush(20) == 0
    captured: list[tuple[bytes, int]] = []
    c = Consumer(tansu.client_config({"group.id": f"g-{topic}", "enable.auto.commit": False}))
    capture_fetches(c, captured)
    got = []
    try:
        c.assign([TopicPartition(topic, q, 0) for q in range(2)])
        for _ in range(60):
            got += [(msg.partition(), msg.offset(), msg.value())
                    for msg in c.consume(100, timeout=0.5) if msg.error() is None]
            if len(got) >= 20:
                break
    finally:
        c.close()
    assert sorted(got) == sorted((i % 2, i // 2, b"v%d" % i) for i in range(20))
    assert captured
    for body, version in captured:
        want = rows_of_message(R.decode(body, version), version)
        for name in IMPLS:
            w = importlib.import_module(name).parse_fetch(body, version)
            assert w is not None and plain_rows(w) == want


@pytest.mark.timeout(180)
def test_apache_kafka_answers_read_the_same_through_the_consumer(apache_kafka):
    """A read_committed consumer on Apache Kafka: committed records exactly, aborted ones
    left out; every Fetch answer it read gives the generated codec's fields in both
    twins, aborted-transaction lists included."""
    topic = unique_topic("fetchwire")
    create_topic(apache_kafka, topic, 3)
    plain = Producer(apache_kafka.client_config({"linger.ms": 2}))
    for i in range(30):
        plain.produce(topic, b"p%d" % i, key=b"k", partition=i % 3)
    assert plain.flush(20) == 0
    txn = Producer(apache_kafka.client_config({"transactional.id": f"tid-{topic}"}))
    txn.init_transactions(30)
    txn.begin_transaction()
    for i in range(6):
        txn.produce(topic, b"aborted%d" % i, partition=i % 3)
    txn.flush(20)
    txn.abort_transaction(30)
    txn.begin_transaction()
    for i in range(6):
        txn.produce(topic, b"committed%d" % i, partition=i % 3)
    txn.commit_transaction(30)
    captured: list[tuple[bytes, int]] = []
    c = Consumer(apache_kafka.client_config({
        "group.id": f"g-{topic}", "isolation.level": "read_committed",
        "enable.auto.commit": False, "auto.offset.reset": "earliest"}))
    capture_fetches(c, captured)
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(3)])
        got = []
        for _ in range(60):
            got += [(msg.partition(), msg.value()) for msg in c.consume(100, timeout=0.5)
                    if msg.error() is None]
            if len(got) >= 36:
                break
    finally:
        c.close()
    expected = sorted([(i % 3, b"p%d" % i) for i in range(30)]
                      + [(i % 3, b"committed%d" % i) for i in range(6)])
    assert sorted(got) == expected
    assert captured
    with_aborted = 0
    for body, version in captured:
        want = rows_of_message(R.decode(body, version), version)
        for name in IMPLS:
            w = importlib.import_module(name).parse_fetch(body, version)
            assert w is not None and plain_rows(w) == want
        with_aborted += any(row[8] for row in want[1])
        assert version == FETCH_MAX_VERSION
    assert with_aborted


@pytest.mark.skipif(FORCED_PURE, reason="the compiled reader is not used in pure mode")
def test_the_compiled_walk_gives_the_interpreter_lock_up():
    """Beside a busy thread (tests/harness/gil.py), a call that gives the lock up waits about
    a second to get it back: one parse of a large response takes that long; the same parse
    asked to keep the lock (nogil_bytes -1, or above the body's size) never waits."""
    from harness.gil import seconds_beside_a_busy_thread

    from kafka_fast._native import _fetchwire

    # One topic of 300,000 partitions (v18, no records): a walk of some milliseconds, long
    # enough for the busy thread to take the lock while it runs.
    n = 300_000
    part = struct.pack(">ihqqq", 1, 0, 10, 10, 0) + b"\x00" + struct.pack(">i", -1) + b"\x00\x00"
    body = (struct.pack(">ihi", 0, 0, 0) + b"\x02" + uuid.uuid4().bytes + uvarint(n + 1)
            + part * n + b"\x00\x00")
    w = _fetchwire.parse_fetch(body, FETCH_MAX_VERSION)
    assert len(w) == n and w.high_watermark[n - 1] == 10
    # Up to three probes: on a loaded machine the busy thread may not be scheduled during
    # one walk (the lock then comes straight back); a walk that kept the lock never waits.
    probes = []
    for _ in range(3):
        probes.append(seconds_beside_a_busy_thread(
            lambda: _fetchwire.parse_fetch(body, FETCH_MAX_VERSION, 0), 1))
        if probes[-1] > 0.5:
            break
    assert max(probes) > 0.5, f"{probes}: the lock was kept"
    for keep in (-1, len(body) + 1):
        assert seconds_beside_a_busy_thread(
            lambda keep=keep: _fetchwire.parse_fetch(body, FETCH_MAX_VERSION, keep), 1) < 0.5


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
