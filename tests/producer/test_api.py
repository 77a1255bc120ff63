"""Producer API checks that need no broker: argument errors, configuration rules, purge,
close, and the accumulator's batching bounds."""

from __future__ import annotations

import socket
import time

import pytest

from kafka_fast import ConfigError, KafkaError, KafkaException, Producer
from kafka_fast.config import make_config
from kafka_fast.producer.accumulator import Accumulator
from kafka_fast.producer.partitioner import algorithm_id
from kafka_fast.records import decode_batches


def _dead() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def producer():
    p = Producer({"bootstrap.servers": _dead(), "message.timeout.ms": 60000})
    yield p
    p.purge()
    p.close(0)


@pytest.mark.parametrize("kwargs, message", [
    ({"value": 12}, "value must be bytes, str or None, not int"),
    ({"key": 1.5}, "key must be bytes, str or None, not float"),
    ({"headers": "h"}, "headers must be a list of (name, value) tuples or a dict, not str"),
    ({"headers": [("n", 5)]}, "headers value of 'n' must be bytes, str or None, not int"),
    ({"headers": [(5, b"v")]}, "headers names must be str, not int"),
    ({"headers": ["nv"]}, "headers entries must be (name, value) tuples, got 'nv'"),
    ({"partition": "1"}, "partition must be an int, not str"),
    ({"timestamp": "now"}, "timestamp must be an int (milliseconds since the epoch), not str"),
    ({"on_delivery": 5}, "on_delivery must be callable, not int"),
    ({"callback": "x"}, "callback must be callable, not str"),
])
def test_wrong_types_raise_type_error_naming_the_argument(producer, kwargs, message):
    with pytest.raises(TypeError) as info:
        producer.produce("t", **kwargs)
    assert str(info.value) == message
    assert len(producer) == 0


def test_out_of_range_partitions_take_the_checked_path(producer):
    # Unknown topic: queued until metadata says whether the partition exists.
    producer.produce("t", b"v", partition=2**31 - 1)
    producer.produce("t", b"v", partition=-7)
    assert len(producer) == 2


@pytest.mark.parametrize("kwargs, exc, message", [
    ({"partition": 2**40}, OverflowError, "partition 1099511627776 is out of range"),
    ({"timestamp": 2**70}, OverflowError, "timestamp 1180591620717411303424 is out of range"),
    ({"timestamp": 2**63}, OverflowError, "timestamp 9223372036854775808 is out of range"),
    ({"timestamp": -5}, ValueError, "timestamp must not be negative"),
])
def test_out_of_range_numbers_raise_in_the_callers_thread(producer, kwargs, exc, message):
    with pytest.raises(exc, match=message):
        producer.produce("t", b"v", **kwargs)
    assert len(producer) == 0


@pytest.mark.parametrize("call", ["poll", "flush"])
def test_wrongly_typed_timeouts_name_the_parameter(producer, call):
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not str"):
        getattr(producer, call)("x")


def test_topic_must_be_a_string(producer):
    with pytest.raises(TypeError, match="topic must be a str, not int"):
        producer.produce(5, b"v")
    with pytest.raises(ValueError, match="topic must not be empty"):
        producer.produce("", b"v")


def test_str_and_bytes_like_are_accepted_and_reported_as_bytes(producer):
    reports = []
    producer.produce("t", "välue", bytearray(b"key"), headers={"h": "x"},
                     on_delivery=lambda e, m: reports.append(m))
    producer.produce("t", memoryview(b"mv"), callback=lambda e, m: reports.append(m))
    assert len(producer) == 2
    producer.purge()
    producer.poll(1)
    assert [(m.value(), m.key(), m.headers()) for m in reports] == [
        ("välue".encode(), b"key", [("h", b"x")]), (b"mv", None, None)]
    assert [m.error().code() for m in reports] == [KafkaError._PURGE_QUEUE] * 2


def test_idempotence_rules():
    with pytest.raises(ConfigError, match="acks=1"):
        Producer({"bootstrap.servers": _dead(), "enable.idempotence": True, "acks": 1})
    with pytest.raises(ConfigError, match="at most 5"):
        Producer({"bootstrap.servers": _dead(), "enable.idempotence": True,
                  "max.in.flight": 6})
    # Defaulted idempotence gives way to an explicit acks=1, as in the Java client.
    p = Producer({"bootstrap.servers": _dead(), "acks": 1})
    try:
        assert p._idempotent is False
    finally:
        p.close(0)
    with pytest.raises(ConfigError, match="No such configuration property"):
        Producer({"bootstrap.servers": _dead(), "linger": 5})


def test_closed_producer_refuses_records():
    p = Producer({"bootstrap.servers": _dead()})
    p.close(0)
    with pytest.raises(RuntimeError, match="Producer has been closed"):
        p.produce("t", b"v")
    p.close()  # idempotent


def test_flush_of_nothing_returns_at_once(producer):
    start = time.monotonic()
    assert producer.flush(5) == 0
    assert producer.poll(0) >= 0
    assert time.monotonic() - start < 1


def _acc(**conf) -> Accumulator:
    base = {"bootstrap.servers": "x:1", "linger.ms": 1000}
    base.update(conf)
    return Accumulator(make_config(base, "producer"), algorithm_id("murmur2_random"))


def test_accumulator_seals_on_batch_size_and_keeps_order():
    acc = _acc(**{"batch.size": 2000})
    t = acc.topic("t")
    acc.set_partitions(t, 2, [0, 1])
    ps = t.parts[1]
    for i in range(100):
        acc.append(ps, b"v%03d" % i + b"x" * 40, b"k", 0, None, None)
    assert len(ps.sealed) >= 2
    acc.seal_all()
    values = []
    for batch in ps.sealed:
        payload = batch.wire_bytes(-1, -1, False)
        assert len(payload) <= 2000 + 100
        (rb,) = decode_batches(payload)
        values += [r.value for r in rb.records()]
        assert len(rb.records()) == batch.count
    assert values == [b"v%03d" % i + b"x" * 40 for i in range(100)]
    assert acc.bytes == sum(b.size for b in ps.sealed)


def test_accumulator_batch_num_messages_and_linger():
    acc = _acc(**{"batch.num.messages": 10, "linger.ms": 5})
    t = acc.topic("t")
    acc.set_partitions(t, 1, [0])
    ps = t.parts[0]
    for i in range(25):
        acc.append(ps, b"%d" % i, None, 0, None, None)
    assert [b.count for b in ps.sealed] == [10, 10]
    assert len(ps.builder) == 5
    assert acc.seal_lingering(time.monotonic()) > time.monotonic()  # not yet due
    later = time.monotonic() + 1
    # Two sealed batches still wait to be sent: the lingering one stays open (it would only
    # queue a small batch behind them) and is looked at again shortly.
    assert acc.seal_lingering(later) == pytest.approx(later + 0.005)
    assert [b.count for b in ps.sealed] == [10, 10] and len(ps.builder) == 5
    acc.append(ps, b"25", None, 0, None, None)
    assert len(ps.builder) == 6
    ps.sealed.clear()  # the I/O thread took them
    assert acc.seal_lingering(later + 0.005) == float("inf")
    assert [b.count for b in ps.sealed] == [6]
    assert ps.builder is None


def test_flush_seals_a_lingering_batch_even_behind_a_waiting_one():
    acc = _acc(**{"batch.num.messages": 2, "linger.ms": 5})
    t = acc.topic("t")
    acc.set_partitions(t, 1, [0])
    ps = t.parts[0]
    for i in range(3):
        acc.append(ps, b"%d" % i, None, 0, None, None)
    acc.flushing = True
    assert acc.seal_lingering(time.monotonic() + 1) == float("inf")
    assert [b.count for b in ps.sealed] == [2, 1]


def test_accumulator_budget_and_message_size():
    acc = _acc(**{"queue.buffering.max.messages": 3, "message.max.bytes": 1000})
    acc.count = 3
    with pytest.raises(BufferError, match="queue.buffering.max.messages=3"):
        acc.check_budget()
    t = acc.topic("t")
    acc.set_partitions(t, 1, [0])
    with pytest.raises(KafkaException) as info:
        acc.append(t.parts[0], b"x" * 990, b"k" * 11, 0, None, None)
    assert info.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert t.parts[0].builder is None


def test_sticky_partition_moves_when_its_batch_is_sealed():
    acc = _acc()
    t = acc.topic("t")
    acc.set_partitions(t, 4, [0, 1, 2, 3])
    first = t.sticky
    assert acc.partitioner(None, t) == first
    acc.append(t.parts[first], b"v", None, 0, None, None)
    acc.seal(t.parts[first])
    assert t.sticky != first
    assert acc.partitioner(b"key", t) == (0x7FFFFFFF & _murmur(b"key")) % 4


def _murmur(key: bytes) -> int:
    from kafka_fast.producer.partitioner import murmur2

    return murmur2(key)


def test_a_producer_whose_constructor_raised_is_dropped_quietly(caplog):
    """The half-made object of a refused configuration is collected without a logged
    traceback (its __del__ has nothing to stop)."""
    import gc
    import logging

    caplog.set_level(logging.DEBUG, logger="kafka_fast")
    with pytest.raises(ConfigError, match="acks"):
        Producer({"bootstrap.servers": _dead(), "acks": "several"})
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
