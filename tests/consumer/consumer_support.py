"""Helpers for the consumer tests: known records produced by reference clients, read back."""

from __future__ import annotations

import time

from kafka_fast import Consumer


def make_items(n: int, partitions: int, tag: str = "") -> list[dict]:
    """Known records: keys, values (some null), headers on some, explicit timestamps."""
    items = []
    for i in range(n):
        items.append({
            "partition": i % partitions,
            "key": None if i % 11 == 5 else f"key-{tag}{i}".encode(),
            "value": None if i % 13 == 7 else f"value-{tag}{i}-".encode() * (1 + i % 4),
            "headers": [("h1", f"{i}".encode()), ("h2", None)] if i % 3 == 0 else None,
            "timestamp": 1_700_000_000_000 + i,
        })
    return items


def produce_confluent(broker, topic: str, items: list[dict], extra: dict | None = None) -> list:
    """Produce with confluent-kafka; returns (partition, offset, key, value, headers, ts)."""
    from confluent_kafka import Producer

    conf = broker.client_config({"linger.ms": 5, "message.timeout.ms": 30000})
    conf.update(extra or {})
    producer = Producer(conf)
    acked: list = []
    errors: list = []

    def reporter(item):
        def report(err, msg):
            if err is not None:
                errors.append(err)
            else:
                acked.append((msg.partition(), msg.offset(), msg.key(), msg.value(),
                              item["headers"], item["timestamp"]))
        return report

    for it in items:
        producer.produce(topic, value=it["value"], key=it["key"], partition=it["partition"],
                         headers=it["headers"], timestamp=it["timestamp"],
                         on_delivery=reporter(it))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors
    return sorted(acked)


def as_tuple(msg) -> tuple:
    return (msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers(),
            msg.timestamp()[1])


def read_all(consumer: Consumer, count: int, timeout: float = 30.0, how: str = "poll") -> list:
    """Read ``count`` records (errors other than EOF fail the test)."""
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        if how == "poll":
            msgs = [consumer.poll(0.5)]
        else:
            msgs = consumer.consume(1000, 0.5)
        for msg in msgs:
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == -191, msg.error()
                continue
            got.append(msg)
    return got


def wait_for(predicate, timeout: float, poll=None, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if poll is not None:
            poll()
        if predicate():
            return
        if poll is None:
            time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout}s")
