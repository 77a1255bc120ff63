"""What ``AIOConsumer`` and ``AIOShareConsumer`` share: a blocking consumer driven from asyncio
on one worker thread (``ConsumerThread``), one call at a time, with reads that are safe to
cancel (``reads``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from .callbacks import reentrant_call
from .consumer_thread import ConsumerThread
from .reads import Held, run_read


class AIOConsumerBase:
    """Calls of one blocking consumer on one thread, serialized by an asyncio lock.

    Every call that touches the consumer's state (reads, assignment, commits, close) runs on
    the same thread, so the consumer sees a single application thread; callbacks that call
    back into the consumer are served on that thread too (``callbacks.reentrant_call``).

    A read (``_read``) runs in slices of ``reads.SLICE`` seconds; a read whose task is
    cancelled goes on until its slice ends and what it got, records or the exception it
    raised, is handed out by the next read (``Held``). ``_close`` stops a read in flight
    within one slice, then runs the consumer's close. Calls after ``_close`` began raise
    ``RuntimeError(CLOSED)``.
    """

    #: the message of the ``RuntimeError`` raised by calls after close
    CLOSED = "Consumer closed"

    def __init__(self, executor: concurrent.futures.Executor | None,
                 thread_name_prefix: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = ConsumerThread(executor, thread_name_prefix)
        #: the executor whose thread runs the calls (the given one, or a pool of one thread)
        self.executor = self._thread.executor
        self._lock = asyncio.Lock()
        self._closed = False
        self._closing = False
        # What cancelled reads got (handed out by the next read), the read a cancelled task
        # left running, and the stop flag of the read in flight.
        self._held = Held()
        self._orphan: asyncio.Future | None = None
        self._stop_read: threading.Event | None = None

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the executor, after any read a cancelled task left running."""
        inner = reentrant_call(self, self._loop, fn, args)
        if inner is not None:
            return await inner
        self._check_open()
        async with self._lock:
            await self._adopt_orphan()
            self._check_open()
            return await self._run(fn, *args)

    def _run(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
        """``fn(*args)`` on the consumer's thread, as an asyncio future."""
        return asyncio.wrap_future(self._thread.submit(fn, *args), loop=self._loop)

    def _check_open(self) -> None:
        if self._closed or self._closing:
            raise RuntimeError(self.CLOSED)

    async def _adopt_orphan(self) -> None:
        """Wait for the read a cancelled task left running (it ends within one slice) and
        keep what it got (lock held). Cancelled meanwhile, the read stays the orphan."""
        orphan = self._orphan
        if orphan is None:
            return
        if not orphan.cancelled():
            try:
                self._held.keep(await asyncio.shield(orphan))
            except asyncio.CancelledError:
                if not orphan.cancelled():
                    raise
            except Exception as exc:
                self._held.keep_error(exc)
        self._orphan = None

    async def _read(self, call: Callable[[float], Any], timeout: float | None,
                    take: Callable[[Held], Any]) -> Any:
        """A read: what cancelled reads left first (``take``), else ``call`` in slices on
        the executor."""
        inner = reentrant_call(self, self._loop, run_read, (call, timeout, threading.Event()))
        if inner is not None:
            return await inner
        self._check_open()
        async with self._lock:
            await self._adopt_orphan()
            if self._held:
                return take(self._held)
            self._check_open()
            stop = self._stop_read = threading.Event()
            job = self._run(run_read, call, timeout, stop)
            try:
                return await asyncio.shield(job)
            except asyncio.CancelledError:
                stop.set()
                self._orphan = job  # its result goes to the next read
                raise
            finally:
                self._stop_read = None

    def _put_back(self, msgs: list) -> None:
        """Messages read but not handed out (a subclass's processing was cancelled or failed
        part-way): the next read returns them first."""
        self._held.put_back(msgs)

    async def _close(self, close: Callable[[], Any]) -> None:
        """Stop a read in flight (within one slice), wait for a cancelled one, run ``close``
        on the consumer's thread, release the thread; a second call does nothing."""
        if self._closed or self._closing:
            return
        self._closing = True
        stop = self._stop_read
        if stop is not None:
            stop.set()
        try:
            async with self._lock:
                await self._adopt_orphan()
                await self._run(close)
        finally:
            self._closed = True
            await self._loop.run_in_executor(None, self._thread.shutdown, True)
