"""produce_batch: columnar lists, 2-D arrays and packed columns, and confluent-kafka's list of
dicts; records read back exactly."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import TIMESTAMP_CREATE_TIME, KafkaError, KafkaException, Producer
from kafka_fast.producer.partitioner import partition_key


def _packed(items: list[bytes | None]) -> tuple:
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([0 if x is None else len(x) for x in items])
    nulls = np.array([x is None for x in items], dtype=np.bool_)
    return (b"".join(x or b"" for x in items), offsets, nulls)


def _by_partition(got):
    out: dict[int, list] = {}
    for g in got:
        out.setdefault(g.partition, []).append(g)
    return out


def test_columns_of_every_shape_round_trip(broker):
    topic = unique_topic("pb-cols")
    create_topic(broker, topic, 3)
    n = 3000
    keys = [b"key-%05d" % i for i in range(n)]  # 9 bytes each
    values = [b"value-%06d-" % i + bytes([i % 256]) * (i % 50) for i in range(n)]
    with Producer(broker.client_config({"batch.size": 20_000})) as p:
        # 1. lists, with per-record timestamps and one header list for every record
        assert p.produce_batch(topic, values[:1000], keys=keys[:1000],
                               timestamps=list(range(1_600_000_000_000,
                                                     1_600_000_000_000 + 1000)),
                               headers=[("src", b"lists")]) == 1000
        # 2. 2-D uint8 arrays (fixed width keys and values)
        arr_v = np.frombuffer(b"".join(v[:12] for v in values[1000:2000]),
                              dtype=np.uint8).reshape(1000, 12)
        arr_k = np.frombuffer(b"".join(keys[1000:2000]), dtype=np.uint8).reshape(1000, 9)
        assert p.produce_batch(topic, arr_v, keys=arr_k) == 1000
        # 3. packed columns with null values and keys
        pv = [None if i % 10 == 0 else values[i] for i in range(2000, 3000)]
        pk = [None if i % 7 == 0 else keys[i] for i in range(2000, 3000)]
        assert p.produce_batch(topic, _packed(pv), keys=_packed(pk),
                               headers=[[("i", b"%d" % i)] for i in range(2000, 3000)]) == 1000
        assert p.flush(30) == 0
    got = read_confluent(broker, topic, 3, n)
    assert len(got) == n
    want_by_key: dict = {}
    for i in range(1000):
        want_by_key[keys[i]] = (values[i], (("src", b"lists"),), 1_600_000_000_000 + i)
    for i in range(1000, 2000):
        want_by_key[keys[i]] = (values[i][:12], (), None)
    null_keyed = []
    for j, i in enumerate(range(2000, 3000)):
        rec = (pv[j], (("i", b"%d" % i),), None)
        if pk[j] is None:
            null_keyed.append(rec)
        else:
            want_by_key[keys[i]] = rec
    seen_null = []
    for g in got:
        if g.key is None:
            seen_null.append((g.value, g.headers, None))
            continue
        value, headers, ts = want_by_key.pop(g.key)
        assert (g.value, g.headers) == (value, headers)
        if ts is not None:
            assert g.timestamp == ts
        # keyed records sit where murmur2 puts them
        assert g.partition == partition_key(g.key, 3, 4)
    assert want_by_key == {}
    assert sorted(seen_null, key=repr) == sorted(null_keyed, key=repr)
    # per partition, records keep the order in which they were given
    for records in _by_partition(got).values():
        idx = [int(g.value[6:12]) for g in records if g.value is not None]
        assert idx == sorted(idx)


def test_explicit_partition_and_per_record_callbacks(broker):
    topic = unique_topic("pb-cb")
    create_topic(broker, topic, 2)
    reports = []
    values = [b"v%04d" % i for i in range(500)]
    with Producer(broker.client_config()) as p:
        assert p.produce_batch(topic, values, partition=1,
                               on_delivery=lambda e, m: reports.append(
                                   (e, m.partition(), m.offset(), m.value()))) == 500
        assert p.flush(30) == 0
    assert reports == [(None, 1, i, values[i]) for i in range(500)]
    got = read_confluent(broker, topic, 2, 500)
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (1, i, values[i]) for i in range(500)]


@pytest.mark.parametrize("form", ["arrays", "packed"])
def test_keyed_columns_report_every_record_from_its_rows(broker, form):
    """Keyed array and packed columns spread over partitions: each batch is encoded from the
    picked rows and its reports pick the same rows, so every record's report carries its own
    key, value, timestamp, partition and offset."""
    topic = unique_topic(f"pb-cbrows-{form}")
    create_topic(broker, topic, 3)
    n = 4000
    keys = [b"k%05d" % (i * 7919 % n) for i in range(n)]
    values = [b"v%05d" % i for i in range(n)]
    stamps = np.arange(n, dtype=np.int64) + 1_650_000_000_000
    if form == "arrays":
        cv = np.frombuffer(b"".join(values), np.uint8).reshape(n, 6)
        ck = np.frombuffer(b"".join(keys), np.uint8).reshape(n, 6)
    else:
        cv, ck = _packed(values), _packed(keys)
    reports = []
    with Producer(broker.client_config({"batch.size": 16_384})) as p:
        assert p.produce_batch(topic, cv, keys=ck, timestamps=stamps,
                               on_delivery=lambda e, m: reports.append(
                                   (e, m.partition(), m.offset(), m.key(), m.value(),
                                    m.timestamp()))) == n
        assert p.flush(30) == 0
    assert len(reports) == n and {r[0] for r in reports} == {None}
    by_value = {r[4]: r for r in reports}
    for i in range(n):
        _, part, _, key, value, (ts_type, ts) = by_value[values[i]]
        assert (key, part) == (keys[i], partition_key(keys[i], 3, 4))
        if ts_type == TIMESTAMP_CREATE_TIME:  # the mock cluster reports a log-append time
            assert ts == 1_650_000_000_000 + i
    got = read_confluent(broker, topic, 3, n)
    assert sorted((g.partition, g.offset, g.key, g.value) for g in got) == sorted(
        (r[1], r[2], r[3], r[4]) for r in reports)
    for records in _by_partition(got).values():
        idx = [int(g.value[1:]) for g in records]
        assert idx == sorted(idx)


def test_confluent_list_of_dicts_form(broker):
    topic = unique_topic("pb-dicts")
    create_topic(broker, topic, 2)
    reports = []
    messages = [{"value": b"v%d" % i, "key": b"k%d" % i, "partition": i % 2,
                 "headers": [("n", b"%d" % i)], "timestamp": 1_650_000_000_000 + i}
                for i in range(50)]
    messages.append({"value": b"x" * 2_000_000, "partition": 0})  # too large
    messages.append({"value": b"bad", "partition": 9})  # no such partition
    with Producer(broker.client_config()) as p:
        p.list_topics(topic, 10)
        queued = p.produce_batch(topic, messages,
                                 on_delivery=lambda e, m: reports.append((e, m.value())))
        assert queued == 50
        assert p.flush(30) == 0
    assert messages[50]["_error"].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert messages[51]["_error"].code() == KafkaError._UNKNOWN_PARTITION
    assert all("_error" not in m for m in messages[:50])
    assert sorted(reports) == sorted((None, b"v%d" % i) for i in range(50))
    got = read_confluent(broker, topic, 2, 50)
    assert sorted((g.partition, g.key, g.value, g.headers, g.timestamp) for g in got) == sorted(
        (i % 2, b"k%d" % i, b"v%d" % i, (("n", b"%d" % i),), 1_650_000_000_000 + i)
        for i in range(50))


def test_bad_columns_are_refused(kafka):
    topic = unique_topic("pb-bad")
    create_topic(kafka, topic, 1)
    with Producer(kafka.client_config()) as p:
        with pytest.raises(TypeError, match="values must be a list, a 2-D uint8 array"):
            p.produce_batch(topic, 42)
        with pytest.raises(TypeError, match=r"values\[1\] must be bytes, str or None"):
            p.produce_batch(topic, [b"a", 3])
        with pytest.raises(ValueError, match="keys has 1 entries for 2 values"):
            p.produce_batch(topic, [b"a", b"b"], keys=[b"k"])
        with pytest.raises(TypeError, match="2-D uint8"):
            p.produce_batch(topic, np.zeros((2, 3), dtype=np.int32))
        with pytest.raises(ValueError, match="non-decreasing"):
            p.produce_batch(topic, (b"abc", np.array([0, 2, 1], dtype=np.int64)))
        with pytest.raises(KafkaException) as info:
            p.produce_batch(topic, [b"x" * 1_000_001])
        assert info.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
        assert len(p) == 0


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
def test_large_call_encoded_by_worker_threads_keeps_order(broker, codec):
    """Enough records for several batches per partition: batches are encoded on worker
    threads (zstd too: each thread has its own compressor) and must still reach each
    partition in input order."""
    topic = unique_topic(f"pb-par-{codec}")
    create_topic(broker, topic, 4)
    n = 30_000
    keys = np.frombuffer(b"".join(b"k%07d" % (i % 997) for i in range(n)),
                         dtype=np.uint8).reshape(n, 8)
    values = np.frombuffer(b"".join(b"%08d" % i for i in range(n)),
                           dtype=np.uint8).reshape(n, 8)
    conf = broker.client_config({"batch.num.messages": 1000, "compression.type": codec})
    with Producer(conf) as p:
        assert p.produce_batch(topic, values, keys=keys) == n
        assert p.flush(60) == 0
    got = read_confluent(broker, topic, 4, n, timeout=60)
    assert len(got) == n
    for part, records in _by_partition(got).items():
        idx = [int(g.value) for g in records]
        assert idx == sorted(idx)
        assert all(partition_key(g.key, 4, 4) == part for g in records)
    assert sorted(int(g.value) for g in got) == list(range(n))


def _indexed_rows(n: int, width: int) -> np.ndarray:
    """``n`` rows of ``width`` bytes: the row's index in 9 digits, then filler."""
    rows = np.full((n, width), ord("x"), dtype=np.uint8)
    rows[:, :9] = np.frombuffer(b"".join(b"%09d" % i for i in range(n)),
                                dtype=np.uint8).reshape(n, 9)
    return rows


def test_large_call_keeps_a_bounded_window_of_unacknowledged_batches(real_broker):
    """A call of 40 MB never has more than AHEAD_BYTES (plus the batch being queued) encoded
    and waiting for acknowledgement: the rest is encoded as acknowledgements come back. The
    producer's pools of batch buffers and of per-record partition/order arrays hold at most
    that window after two such keyed calls, and the second call reuses the first one's arrays.
    Every record still arrives once, in order, in its key's partition. (Real brokers: the
    mock cluster keeps only the end of a partition's log.)"""
    broker = real_broker
    from kafka_fast.producer.bulk import AHEAD_BYTES

    topic = unique_topic("pb-window")
    create_topic(broker, topic, 2)
    n, batch_size = 100_000, 262_144
    values = _indexed_rows(n, 400)
    keys = np.ascontiguousarray(values[:, :9])  # the row's index: both partitions get records
    with Producer(broker.client_config({"batch.size": batch_size})) as p:
        bulk = p._bulk
        window = max(AHEAD_BYTES, 4 * batch_size)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], bulk.unacked())
                time.sleep(0.0005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            half = n // 2
            assert p.produce_batch(topic, values[:half], keys=keys[:half]) == half
            first = bulk.scratch.held_bytes()
            assert p.produce_batch(topic, values[half:], keys=keys[half:]) == n - half
        finally:
            done.set()
            sampler.join()
        assert p.flush(60) == 0
        assert bulk.unacked() == 0
        # acknowledged batches gave their buffers back to the producer's pool, where the
        # next batches took them from (the records read back below are still exact)
        free = bulk.buffers.free_buffers()
        assert free and sum(len(b) for b in free) <= window
        # the partition and order arrays of the first call served the second one
        assert 0 < first == bulk.scratch.held_bytes() <= window
    assert 0 < peak[0] <= AHEAD_BYTES + batch_size
    got = read_confluent(broker, topic, 2, n, timeout=120)
    assert len(got) == n
    assert sorted(int(g.value[:9]) for g in got) == list(range(n))
    for part, records in _by_partition(got).items():
        assert [g.offset for g in records] == list(range(len(records)))
        idx = [int(g.value[:9]) for g in records]
        assert idx == sorted(idx)
        assert all(g.key == g.value[:9] and partition_key(g.key, 2, 4) == part
                   for g in records)


def test_large_call_to_a_stalled_broker_waits_once_then_queues_the_rest(fresh_mock_cluster):
    """The leader stops answering: produce_batch waits for acknowledgements for
    delivery.timeout.ms in all, then queues the rest; every record is then reported failed
    exactly once (nothing lost silently, nothing blocked for good)."""
    from kafka_fast.producer.bulk import AHEAD_BYTES

    cluster = fresh_mock_cluster
    topic = unique_topic("pb-stalled")
    create_topic(cluster, topic, 1)
    n = 100_000
    values = _indexed_rows(n, 400)
    failed: list[int] = []
    delivered: list[int] = []

    def report(err, msg) -> None:
        (failed if err is not None else delivered).append(int(msg.value()[:9]))

    conf = cluster.client_config({"batch.size": 262_144, "delivery.timeout.ms": 1500,
                                  "request.timeout.ms": 1000, "retries": 0})
    with Producer(conf) as p:
        leader = p.list_topics(topic, 10).topics[topic].partitions[0].leader
        cluster.set_rtt(leader, 20_000)
        try:
            start = time.monotonic()
            assert p.produce_batch(topic, values, partition=0, on_delivery=report) == n
            waited = time.monotonic() - start
            assert p.flush(30) == 0
        finally:
            cluster.set_rtt(leader, 0)
    assert 1.0 <= waited < 15, waited
    assert delivered == []
    assert sorted(failed) == list(range(n))
    assert n * 400 > 2 * AHEAD_BYTES  # the call is larger than the window


def test_the_producer_lets_go_of_the_columns_once_reports_are_served(broker):
    """After flush() served the reports, nothing in the producer keeps the caller's columns
    (the reports of a keyed call refer to them until then)."""
    import gc
    import weakref

    topic = unique_topic("pb-letgo")
    create_topic(broker, topic, 2)
    n = 2000
    values = np.frombuffer(b"".join(b"v%05d" % i for i in range(n)), np.uint8).reshape(n, 6)
    keys = values.copy()
    reported = []
    with Producer(broker.client_config()) as p:
        assert p.produce_batch(topic, values, keys=keys,
                               on_delivery=lambda e, m: reported.append(e)) == n
        assert p.flush(30) == 0
        gone = weakref.ref(values), weakref.ref(keys)
        del values, keys
        gc.collect()
        assert [ref() for ref in gone] == [None, None]
        assert p._bulk.unacked() == 0
    assert reported == [None] * n


def test_two_threads_share_one_producer(broker):
    """Two application threads call produce_batch on one producer at once (one encoder pool,
    Produce requests large enough to be written without the interpreter lock): every record
    arrives once, each thread's records in its order within each partition, and the bulk
    calls are no longer marked once they returned."""
    topic = unique_topic("pb-2threads")
    create_topic(broker, topic, 3)
    n = 20_000  # per thread
    conf = broker.client_config({"batch.num.messages": 1000, "batch.size": 200_000})
    errors: list[BaseException] = []
    with Producer(conf) as p:
        def produce(thread: int) -> None:
            try:
                rows = _indexed_rows(n, 120)
                rows[:, 0] = ord("a") + thread  # the thread's letter, then 8 index digits
                keys = rows[:, 5:9].copy()
                for start in range(0, n, 5_000):
                    assert p.produce_batch(topic, rows[start:start + 5_000],
                                           keys=keys[start:start + 5_000]) == 5_000
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=produce, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert p.flush(60) == 0
        assert p._client.lock_policy.bulk_calls == 0
    got = read_confluent(broker, topic, 3, 2 * n, timeout=60)
    assert len(got) == 2 * n
    for records in _by_partition(got).values():
        for letter in b"ab":
            idx = [int(g.value[1:9]) for g in records if g.value[0] == letter]
            assert idx == sorted(idx)
    assert sorted(g.value[:9] for g in got) == sorted(
        bytes([letter]) + b"%08d" % i for letter in b"ab" for i in range(n))
    assert all(len(g.value) == 120 and g.value[9:] == b"x" * 111 for g in got)


def test_socket_calls_give_the_lock_up_only_during_bulk_calls(broker):
    """produce() leaves the interpreter lock with the I/O thread's socket calls; while
    produce_batch and consume_batch run, calls of 64 KiB or more give it up (counted by the
    socket module). The Produce framing and response parsing keep it throughout (their fields
    are far below 64 KiB here). The records read back exactly."""
    from kafka_fast import OFFSET_BEGINNING, Consumer, TopicPartition
    from kafka_fast._impl import load

    sockio, _ = load("_sockio", "sockio")  # the module the connections use
    producewire, _ = load("_producewire", "producewire")  # the sender's Produce framing
    topic = unique_topic("pb-lock")
    create_topic(broker, topic, 1)
    n = 2_400
    rows = _indexed_rows(n, 1000)
    # room for 500 records: produce_batch waits inside the call for acknowledgements, so its
    # requests (250 KB batches) are written while it runs
    conf = broker.client_config({"linger.ms": 20, "queue.buffering.max.messages": 500,
                                 "batch.num.messages": 250})
    with Producer(conf) as p:
        before = sockio.released_calls()
        wire_before = producewire.released_calls()
        for i in range(400):
            p.produce(topic, bytes(rows[i]), partition=0)
        assert p.flush(30) == 0
        assert sockio.released_calls() == before, "produce() gave the lock up"
        assert p.produce_batch(topic, rows[400:], partition=0) == n - 400
        assert sockio.released_calls() > before, "produce_batch kept the lock"
        assert p.flush(30) == 0
        assert producewire.released_calls() == wire_before, "Produce framing gave the lock up"
    c = Consumer(broker.client_config({"group.id": unique_topic("g"),
                                       "fetch.wait.max.ms": 100}))
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        before = sockio.released_calls()
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < n and time.monotonic() < deadline:
            view = c.consume_batch(100_000, 0.5)
            values.extend(view.values[i] for i in range(len(view)))
        assert sockio.released_calls() > before, "consume_batch kept the lock"
    finally:
        c.close()
    assert values == [bytes(r) for r in rows]


def test_a_pooled_batch_is_stamped_in_place_until_it_is_sent():
    """The sender stamps producer id, epoch and sequence into a ``produce_batch`` batch's
    own buffer before its first send; once sent (a request may still hold it) a new stamp
    goes into a copy and the sent bytes stay as they were."""
    from kafka_fast.net.framing import BufferPool
    from kafka_fast.producer.batch import ProducerBatch
    from kafka_fast.records import decode_batches, encode_batch

    values = _indexed_rows(2_000, 100)
    payload = encode_batch(values, timestamps=7, into=BufferPool(min_size=1024).acquire)
    batch = ProducerBatch(None, 2_000, len(payload), 0.0, None, payload=payload)
    batch.base_sequence = 40
    wire = batch.wire_bytes(9, 2, False)
    assert wire is payload  # stamped in place
    head = decode_batches(wire)[0]
    assert (head.producer_id, head.producer_epoch, head.base_sequence) == (9, 2, 40)
    sent = bytes(wire)
    batch.sent_at = 1.0
    again = batch.wire_bytes(9, 3, False)  # an epoch bump after the send
    assert again is not payload and bytes(payload) == sent
    head = decode_batches(again)[0]
    assert (head.producer_id, head.producer_epoch, head.base_sequence) == (9, 3, 40)
    assert [r.value for r in head.records()] == [bytes(row) for row in values]
