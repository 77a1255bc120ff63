"""The one thread that runs every call of an asyncio consumer's blocking consumer, so that
each field of the consumer's state has a single writing thread (``consumer/ownership.py``)."""

from __future__ import annotations

import concurrent.futures
import queue
import weakref
from collections.abc import Callable
from typing import Any

_STOP = None


def _serve(jobs: queue.SimpleQueue) -> None:
    """Run ``jobs`` in order until the stop mark (a thread of the application's executor)."""
    while True:
        job = jobs.get()
        if job is _STOP:
            return
        future, fn, args = job
        if not future.set_running_or_notify_cancel():
            continue
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to whoever awaits the call
            future.set_exception(exc)
        else:
            future.set_result(result)
        del job, future, fn, args


class ConsumerThread:
    """Calls run one after another on one thread: a single-thread pool of its own, or, given
    an executor, one of that executor's threads, taken until ``shutdown`` (or until this
    object is collected)."""

    def __init__(self, executor: concurrent.futures.Executor | None, name: str) -> None:
        self.executor: concurrent.futures.Executor
        self._jobs: queue.SimpleQueue | None = None
        if executor is None:
            self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                                  thread_name_prefix=name)
            return
        self.executor = executor
        jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._jobs = jobs
        executor.submit(_serve, jobs)
        weakref.finalize(self, jobs.put, _STOP)

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """``fn(*args)`` on the thread; its future."""
        if self._jobs is None:
            return self.executor.submit(fn, *args)
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((future, fn, args))
        return future

    def shutdown(self, wait: bool = True) -> None:
        """Release the thread once the calls submitted so far have run (waiting for them
        with ``wait``, when the pool is this object's own)."""
        if self._jobs is None:
            self.executor.shutdown(wait=wait)
        else:
            self._jobs.put(_STOP)
