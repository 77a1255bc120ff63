"""produce() from several application threads on one Producer, and the accumulator's lock
they share."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import Producer
from kafka_fast.producer.routing import NATIVE, RouteLock


def test_two_threads_calling_produce_deliver_every_record_once_in_order(kafka):
    """Two threads call produce() on one producer: every record arrives once, and each
    thread's records keep their order within each partition."""
    topic = unique_topic("produce-2threads")
    create_topic(kafka, topic, 6)
    n = 100_000  # per thread
    values = {t: [b"%c%07d" % (ord("a") + t, i) + b"x" * 92 for i in range(n)] for t in range(2)}
    keys = [b"k%d" % (i % 61) for i in range(n)]
    errors: list[BaseException] = []
    start = threading.Barrier(2)
    with Producer(kafka.client_config({"linger.ms": 5})) as p:
        p.list_topics(topic, timeout=30)

        def produce(thread: int) -> None:
            try:
                start.wait()
                for i, value in enumerate(values[thread]):
                    while True:
                        try:
                            p.produce(topic, value, keys[i])
                            break
                        except BufferError:
                            p.poll(0.05)
                    if not i & 0x3FFF:
                        p.poll(0)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=produce, args=(t,)) for t in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert p.flush(60) == 0
    got = read_confluent(kafka, topic, 6, 2 * n, timeout=60)
    assert sorted(g.value for g in got) == sorted(v for vs in values.values() for v in vs)
    for letter in b"ab":
        for part in range(6):
            mine = [int(g.value[1:8]) for g in got if g.value[0] == letter and g.partition == part]
            assert mine == sorted(mine)


@pytest.mark.skipif(not NATIVE, reason="the pure twin's lock is threading.Lock")
def test_a_woken_waiter_does_not_hold_the_lock_while_it_waits_for_the_interpreter():
    """A thread woken by the lock's release must not keep the lock while it waits for the
    interpreter lock: the thread that released it (and still runs) takes it straight back.
    Otherwise two threads calling produce() hand both locks to each other on every record
    (about two context switches per record, a third of the rate). The switch interval is
    raised so the releasing thread keeps the interpreter lock throughout."""
    lock = RouteLock()
    lock.acquire()
    blocked = threading.Event()
    taken_by_waiter: list[bool] = []

    def waiter() -> None:
        blocked.set()
        taken_by_waiter.append(lock.acquire())
        lock.release()

    before = sys.getswitchinterval()
    sys.setswitchinterval(2.0)
    thread = threading.Thread(target=waiter)
    try:
        thread.start()
        blocked.wait()
        time.sleep(0.1)  # the waiter now waits in acquire(), without the interpreter lock
        lock.release()
        # Keep running (and holding the interpreter lock) while the waiter wakes up.
        woken = time.monotonic() + 0.1
        while time.monotonic() < woken:
            pass
        deadline = time.monotonic() + 0.5
        again = False
        while not again and time.monotonic() < deadline:
            again = lock.acquire(blocking=False)
        assert again, "the woken waiter kept the lock while waiting for the interpreter lock"
        lock.release()
    finally:
        sys.setswitchinterval(before)
        thread.join(10)
    assert taken_by_waiter == [True]
