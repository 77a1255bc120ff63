"""``AIOProducer``: the Producer for asyncio programs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import KafkaError, KafkaException
from ..message import Message
from ..producer import Producer
from ..producer.contract import record_count
from .callbacks import wrap_config

_Self = TypeVar("_Self", bound="AIOProducer")

log = logging.getLogger("kafka_fast.aio")

#: How long the delivery thread waits for reports before looking at the closed flag again.
POLL_INTERVAL = 0.1


class _Delivery(asyncio.Future):
    """One record's delivery future, also its delivery callback: called with the report on
    the delivery thread, it keeps the report and queues itself for the loop. One object per
    record (not a future plus a callback object plus a report tuple) keeps what the cyclic
    garbage collector must scan while records are in flight small."""

    __slots__ = ("user_cb", "reports", "err", "msg")

    user_cb: Callable | None
    reports: deque
    err: KafkaError | None
    msg: Message | None

    @classmethod
    def make(cls, loop: asyncio.AbstractEventLoop, user_cb: Callable | None,
             reports: deque) -> _Delivery:
        # The future's own (compiled) __init__: a Python one costs more than the rest.
        future = cls(loop=loop)
        future.user_cb = user_cb
        future.reports = reports
        future.err = future.msg = None
        return future

    def __call__(self, err: KafkaError | None, msg: Message) -> None:
        self.err = err
        self.msg = msg
        self.reports.append(self)


class _BatchWaiter:
    """Counts the reports of one ``produce_batch`` call where they are served (the delivery
    thread) and the records it did not queue (on the loop); its future resolves when none is
    left, so the loop handles one item per call, not one per record."""

    __slots__ = ("future", "left", "error", "lock")

    def __init__(self, future: asyncio.Future, count: int) -> None:
        self.future = future
        self.left = count
        self.error: KafkaError | None = None
        self.lock = threading.Lock()

    def settle(self, count: int, err: KafkaError | None) -> bool:
        """``count`` records ended (``err``: the error of the one reported, if any); True
        once none is left."""
        with self.lock:
            self.left -= count
            if err is not None and self.error is None:
                self.error = err
            return self.left <= 0

    def finish(self) -> None:
        """Resolve the future (on the loop): None, or the first failure."""
        if not self.future.done():
            if self.error is None:
                self.future.set_result(None)
            else:
                self.future.set_exception(KafkaException(self.error))


class _Reports:
    """The delivery thread and the loop side of delivery reports.

    Owns what both sides share and nothing of the ``AIOProducer``: the thread keeps this
    object and the ``Producer`` alive, never the ``AIOProducer``, so an ``AIOProducer`` dropped
    without ``close()`` is collected, and its finalizer (``stop``) ends the thread once the
    records it queued are reported.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, producer: Producer) -> None:
        self.loop = loop
        self.producer = producer
        # Reports in the order they were served (by the delivery thread, or by flush() on an
        # executor thread); deque appends and pops are atomic, so no lock is needed.
        # Each item is a _Delivery, a (produce_batch waiter, None, None) tuple when a call's
        # last record was reported, or (None, exception, None) for a failure without a
        # callback.
        self.done: deque[Any] = deque()
        self.space = asyncio.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True,
                                       name="kafka_fast-aio-reports")

    # -- the delivery thread ------------------------------------------------------------------
    def serve(self) -> None:
        producer = self.producer
        while not self.stop.is_set() or len(producer):
            try:
                producer.poll(POLL_INTERVAL)
            except Exception as exc:  # raised failures without a callback: to the loop
                self.hand_over([(None, exc, None)])
                continue
            if self.done:
                self.hand_over(self.take_done())
        if self.done:
            self.hand_over(self.take_done())

    def take_done(self) -> list[Any]:
        done = self.done
        return [done.popleft() for _ in range(len(done))]

    def hand_over(self, batch: list) -> None:
        try:
            self.loop.call_soon_threadsafe(self.resolve, batch)
        except RuntimeError:  # the loop is closed: nobody is left to tell
            log.debug("event loop closed: %d delivery results dropped", len(batch),
                      exc_info=True)

    # -- the loop -----------------------------------------------------------------------------
    def resolve(self, batch: list) -> None:
        for item in batch:
            if item.__class__ is _Delivery:
                self.settle(item)
                continue
            target, err, msg = item
            if target is None:
                self.loop.call_exception_handler(
                    {"message": "kafka_fast AIOProducer delivery failure", "exception": err})
                continue
            target.finish()  # a produce_batch call's last report
        self.space.set()

    def settle(self, future: _Delivery) -> None:
        err, msg = future.err, future.msg
        future.msg = None
        if future.user_cb is not None:
            try:
                future.user_cb(err, msg)
            except Exception as exc:  # one callback's failure costs no other record its report
                self.loop.call_exception_handler(
                    {"message": "kafka_fast AIOProducer on_delivery callback raised",
                     "exception": exc, "future": future})
        if not future.done():
            if err is None:
                future.set_result(msg)
            else:
                future.set_exception(KafkaException(err))


class AIOProducer:
    """A ``Producer`` driven from asyncio; create it inside a running event loop.

    ``produce()`` never blocks the loop: the record is queued at once, and a delivery thread
    serves reports, handing each batch of completions to the loop with one
    ``call_soon_threadsafe``. A cancelled delivery future does not cancel the record: it is
    still sent, and ``on_delivery`` (if given) still sees its report. An ``on_delivery`` that
    raises goes to the loop's exception handler; the other records' futures and callbacks are
    served as usual. ``batch_size`` and ``buffer_timeout`` are accepted for compatibility with
    confluent-kafka's AIOProducer and have no effect (records are never held back in an
    asyncio-side buffer). An AIOProducer dropped without ``close()`` stops its delivery thread
    once the records it queued are reported, and its producer's threads and sockets go with it.
    """

    def __init__(self, producer_conf: dict[str, Any], max_workers: int = 4,
                 executor: concurrent.futures.Executor | None = None, batch_size: int = 1000,
                 buffer_timeout: float = 1.0) -> None:
        self._loop = asyncio.get_running_loop()
        self._owns_executor = executor is None
        self.executor = executor or concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="kafka_fast-aio")
        # error_cb/throttle_cb/stats_cb start on the loop without holding up the delivery
        # thread (nor keeping this object alive: the thread keeps the configuration).
        self._producer = Producer(wrap_config(self._loop, producer_conf, None, wait=False))
        self._reports = _Reports(self._loop, self._producer)
        self._done = self._reports.done
        self._space = self._reports.space
        self._closed = False
        self._reports.thread.start()
        weakref.finalize(self, _dropped, self._reports.stop, self.executor
                         if self._owns_executor else None)

    # -- producing ----------------------------------------------------------------------------
    async def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                      on_delivery: Callable | None = None, timestamp: int = 0,
                      headers: Any = None) -> asyncio.Future:
        """Queue one record; returns a future resolving to its delivered ``Message``.

        Waits (without blocking the loop) while the local queue is full. ``on_delivery`` runs
        on the loop with ``(err, msg)`` before the future resolves.
        """
        self._check_open()
        future = _Delivery.make(self._loop, on_delivery, self._done)
        while True:
            try:
                self._producer.produce(topic, value, key, partition, future, timestamp, headers)
                return future
            except BufferError:
                await self._wait_for_space()

    async def produce_batch(self, topic: str, values: Any = None, partition: int = -1, *,
                            keys: Any = None, timestamps: Any = None,
                            headers: Any = None) -> None:
        """Queue many records (``Producer.produce_batch``'s columnar form, called on the
        executor) and return once every one is delivered; raises ``KafkaException`` with the
        first failure."""
        self._check_open()
        count = _record_count(values)
        if count == 0:
            # Nothing to wait for: the synchronous call still checks every argument.
            self._producer.produce_batch(topic, values, partition, keys=keys,
                                         timestamps=timestamps, headers=headers)
            return
        waiter = _BatchWaiter(self._loop.create_future(), count)
        done = self._done

        def report(err: KafkaError | None, msg: Message) -> None:
            if waiter.settle(1, err):
                done.append((waiter, None, None))

        # On the executor: encoding a large call, and waiting for acknowledgements when it
        # runs ahead of the broker (Producer.produce_batch), never blocks the loop.
        call = functools.partial(self._producer.produce_batch, topic, values, partition, report,
                                 keys=keys, timestamps=timestamps, headers=headers)
        while True:
            try:
                queued = await self._call(call)
                break
            except BufferError:
                await self._wait_for_space()
        if waiter.settle(count - queued, None):
            waiter.finish()
        await waiter.future

    async def _wait_for_space(self) -> None:
        self._space.clear()
        try:
            await asyncio.wait_for(self._space.wait(), POLL_INTERVAL)
        except asyncio.TimeoutError:
            pass

    # -- blocking calls on the executor -----------------------------------------------------
    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._check_open()
        return await self._loop.run_in_executor(self.executor, fn, *args)

    async def poll(self, timeout: float = 0) -> int:
        """Reports are served by the delivery thread; this waits up to ``timeout`` for it and
        returns 0 (confluent-kafka returns the number of callbacks it served)."""
        if timeout:
            await asyncio.sleep(max(0.0, timeout))
        return 0

    async def flush(self, timeout: float | None = None) -> int:
        """Send everything queued and wait for its reports; returns the records still held."""
        left = await self._call(self._producer.flush, timeout)
        await self._drained()
        return left

    async def _drained(self) -> None:
        """Wait until the reports already taken from the producer reached the loop."""
        marker = _Delivery.make(self._loop, None, self._done)
        self._done.append(marker)
        if not self._reports.thread.is_alive():
            self._reports.resolve(self._reports.take_done())
        await marker

    async def purge(self, in_queue: bool = True, in_flight: bool = True,
                    blocking: bool = True) -> None:
        await self._call(self._producer.purge, in_queue, in_flight, blocking)

    async def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return await self._call(self._producer.list_topics, topic, timeout)

    async def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster id from broker metadata (None if ``timeout`` seconds pass first)."""
        return await self._call(self._producer.cluster_id, timeout)

    async def set_sasl_credentials(self, username: str, password: str) -> None:
        """SASL PLAIN/SCRAM credentials for the next logins; open connections keep theirs."""
        await self._call(self._producer.set_sasl_credentials, username, password)

    async def init_transactions(self, timeout: float | None = None) -> None:
        await self._call(self._producer.init_transactions, timeout)

    async def begin_transaction(self) -> None:
        await self._call(self._producer.begin_transaction)

    async def send_offsets_to_transaction(self, positions: Any, group_metadata: Any,
                                          timeout: float | None = None) -> None:
        await self._call(self._producer.send_offsets_to_transaction, positions,
                         group_metadata, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        await self.flush(timeout)
        await self._call(self._producer.commit_transaction, timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        await self._call(self._producer.abort_transaction, timeout)

    def metrics(self) -> dict[str, int | float]:
        """The producer's flat metrics snapshot (``Producer.metrics``; quick, not awaited)."""
        return self._producer.metrics()

    def __len__(self) -> int:
        return 0 if self._closed else len(self._producer)

    # -- lifecycle ----------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Producer has been closed")

    async def close(self) -> None:
        """Deliver what is queued, then stop the delivery thread and the producer."""
        if self._closed:
            return
        await self.flush()
        self._closed = True
        self._reports.stop.set()
        await self._loop.run_in_executor(None, self._reports.thread.join)
        await self._loop.run_in_executor(None, self._producer.close)
        self._reports.resolve(self._reports.take_done())
        if self._owns_executor:
            await self._loop.run_in_executor(None, self.executor.shutdown, True)

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _dropped(stop: threading.Event, executor: concurrent.futures.Executor | None) -> None:
    """Finalizer of an AIOProducer dropped without close(): the delivery thread ends once
    what was queued is reported (the Producer is released with it); the executor's idle
    threads end now."""
    stop.set()
    if executor is not None:
        executor.shutdown(wait=False)


def _record_count(values: Any) -> int:
    """Records in a ``produce_batch`` column, by ``Producer.produce_batch``'s rules."""
    return record_count(values)
