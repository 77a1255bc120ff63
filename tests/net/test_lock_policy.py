"""The client's rule for giving the interpreter lock up in socket calls."""

from __future__ import annotations

import threading

from kafka_fast.net.lock_policy import BULK_NOGIL_BYTES, KEEP_LOCK, LockPolicy


def test_bulk_calls_from_several_threads():
    policy = LockPolicy()
    assert policy.nogil_bytes == KEEP_LOCK and policy.bulk_calls == 0
    inside = threading.Barrier(3)
    leave = threading.Event()

    def call() -> None:
        with policy.bulk():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert policy.bulk_calls == 2 and policy.nogil_bytes == BULK_NOGIL_BYTES
    leave.set()
    for t in threads:
        t.join()
    assert policy.bulk_calls == 0 and policy.nogil_bytes == KEEP_LOCK


def test_bulk_call_that_raises_is_unmarked():
    policy = LockPolicy()
    try:
        with policy.bulk():
            assert policy.nogil_bytes == BULK_NOGIL_BYTES
            raise ValueError("bad column")
    except ValueError:
        pass
    assert policy.bulk_calls == 0 and policy.nogil_bytes == KEEP_LOCK
