"""Helpers for the AdminClient tests: known records, consumers reading them back, waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from kafka_fast import Consumer
from kafka_fast.admin import AdminClient


@contextmanager
def admin_for(broker, extra: dict | None = None):
    client = AdminClient(broker.client_config({"request.timeout.ms": 20000, **(extra or {})}))
    try:
        yield client
    finally:
        client.close()


def produce(broker, topic: str, records: list[tuple[int, bytes, int]], extra: dict | None = None
            ) -> list[tuple[int, int, bytes]]:
    """Produce ``(partition, value, timestamp)`` records with confluent-kafka, in order;
    returns ``(partition, offset, value)`` as acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(broker.client_config({"linger.ms": 5, **(extra or {})}))
    acked: list[tuple[int, int, bytes]] = []
    errors: list[Any] = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.append((msg.partition(), msg.offset(), msg.value()))

    for partition, value, timestamp in records:
        producer.produce(topic, value, partition=partition, timestamp=timestamp,
                         on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors
    return sorted(acked)


def read(broker, topic: str, count: int, conf: dict, timeout: float = 30.0,
         settle: float = 1.0) -> list[tuple[int, int, bytes]]:
    """Subscribe a kafka_fast consumer with ``conf`` and read until ``count`` records came
    and ``settle`` more seconds brought nothing else; ``(partition, offset, value)``."""
    consumer = Consumer(broker.client_config({"enable.auto.commit": False,
                                              "fetch.wait.max.ms": 100, **conf}))
    got: list[tuple[int, int, bytes]] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        quiet_until = None
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None:
                assert msg.error() is None, msg.error()
                got.append((msg.partition(), msg.offset(), msg.value()))
                quiet_until = None
            if len(got) >= count:
                quiet_until = quiet_until or time.monotonic() + settle
                if time.monotonic() >= quiet_until:
                    break
    finally:
        consumer.close()
    return sorted(got)


def wait_for(check: Callable[[], Any], timeout: float, what: str,
             step: Callable[[], Any] | None = None) -> Any:
    """Call ``check`` until it returns something true (returned); ``step`` between tries."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as exc:  # retried until the deadline
            last = exc
        else:
            if last:
                return last
        if step is not None:
            step()
        else:
            time.sleep(0.1)
    raise AssertionError(f"{what} not within {timeout:g}s (last: {last!r})")
