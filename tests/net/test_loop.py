"""The I/O loop's poll hooks: run every iteration, removed by the method that was added."""

from __future__ import annotations

import threading
import time

from kafka_fast.net.loop import IOLoop


class Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.seen = threading.Event()

    def tick(self) -> float:
        self.calls += 1
        self.seen.set()
        return 0.01


def test_a_bound_method_hook_is_removed_by_another_access_to_it():
    loop = IOLoop("test-loop")
    counter = Counter()
    loop.add_poll_hook(counter.tick)
    loop.start()
    try:
        assert counter.seen.wait(5.0)
        done = threading.Event()
        loop.call_soon(lambda: (loop.remove_poll_hook(counter.tick), done.set()))
        assert done.wait(5.0)
        calls = counter.calls
        for _ in range(3):
            loop.wakeup()
            time.sleep(0.05)
        assert counter.calls == calls
    finally:
        loop.stop(5.0)
