"""``AIOShareConsumer``: the ShareConsumer (KIP-932) for asyncio programs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable
from typing import Any

from ..message import Message
from ..share import AcknowledgeType, Messages, ShareConsumer
from ..topic_partition import TopicPartition
from .callbacks import on_loop, reentrant_call, wrap_config

#: Seconds one worker-thread poll lasts at most: ``close()`` waits no longer for a poll.
SLICE = 0.5


class AIOShareConsumer:
    """A ``ShareConsumer`` driven from asyncio; create it inside a running event loop.

    Every call runs on one worker thread, one at a time, so the loop never blocks and the
    share consumer sees a single thread. ``poll`` waits in slices of ``SLICE`` seconds; a
    cancelled ``poll`` loses nothing: the records its last slice acquired are returned by the
    next ``poll``. Callbacks (``error_cb``, ``throttle_cb``, ``stats_cb`` in the
    configuration, and the acknowledgement commit callback) may be coroutine functions; they
    run on the loop.
    """

    def __init__(self, consumer_conf: dict[str, Any]) -> None:
        self._loop = asyncio.get_running_loop()
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="kafka_fast-aio-share-consumer")
        self._lock = asyncio.Lock()
        self._closed = False
        self._orphan: asyncio.Future | None = None
        self._held: list[Message] = []
        try:
            self._consumer = ShareConsumer(wrap_config(self._loop, consumer_conf, self))
        except BaseException:
            self.executor.shutdown(wait=False)
            raise

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        inner = reentrant_call(self, self._loop, fn, args)
        if inner is not None:
            return await inner
        self._check_open()
        async with self._lock:
            await self._adopt_orphan()
            self._check_open()
            return await self._loop.run_in_executor(self.executor, fn, *args)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("ShareConsumer closed")

    async def _adopt_orphan(self) -> None:
        """Keep what the poll slice of a cancelled ``poll`` got (lock held)."""
        orphan, self._orphan = self._orphan, None
        if orphan is not None:
            self._held.extend(await asyncio.shield(orphan))

    async def __aenter__(self) -> AIOShareConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def subscribe(self, topics: list[str]) -> None:
        """Subscribe to ``topics`` (see ``ShareConsumer.subscribe``)."""
        await self._call(self._consumer.subscribe, topics)

    async def subscription(self) -> list[str]:
        return await self._call(self._consumer.subscription)

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)

    async def poll(self, timeout: float | None = -1) -> Messages:
        """The records acquired for this consumer (empty when ``timeout`` seconds pass first;
        None or a negative number waits)."""
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, (int, float))):
            raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
        wait_forever = timeout is None or timeout < 0
        deadline = time.monotonic() + (0.0 if wait_forever else float(timeout or 0))
        while True:
            self._check_open()
            async with self._lock:
                await self._adopt_orphan()
                if self._held:
                    held, self._held = self._held, []
                    return Messages(held)
                self._check_open()
                left = SLICE if wait_forever else max(0.0, deadline - time.monotonic())
                slice_ = self._loop.run_in_executor(self.executor, self._consumer.poll,
                                                    min(SLICE, left))
                try:
                    got = await asyncio.shield(slice_)
                except asyncio.CancelledError:
                    self._orphan = slice_
                    raise
            if len(got) or (not wait_forever and time.monotonic() >= deadline):
                return got

    async def acknowledge(self, message: Message,
                          ack_type: int = AcknowledgeType.ACCEPT) -> None:
        await self._call(self._consumer.acknowledge, message, ack_type)

    async def acknowledge_offset(self, topic: str, partition: int, offset: int,
                                 ack_type: int = AcknowledgeType.ACCEPT) -> None:
        await self._call(self._consumer.acknowledge_offset, topic, partition, offset, ack_type)

    async def commit_sync(self, timeout: float | None = 60) -> dict[TopicPartition, Any]:
        return await self._call(self._consumer.commit_sync, timeout)

    async def commit_async(self) -> None:
        await self._call(self._consumer.commit_async)

    async def set_acknowledgement_commit_callback(
            self, callback: Callable[[dict, Any], Any] | None) -> None:
        """``callback(offsets, exception)`` (a coroutine function or a plain one) runs on the
        loop when the broker answers acknowledgements."""
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable or None")
        wrapped = None if callback is None else on_loop(self._loop, callback, self)
        await self._call(self._consumer.set_acknowledgement_commit_callback, wrapped)

    async def close(self) -> None:
        """Commit pending acknowledgements, leave the group and stop; a second close does
        nothing. Records a cancelled poll kept are released by the broker."""
        if self._closed:
            return
        async with self._lock:
            if self._closed:
                return
            orphan, self._orphan = self._orphan, None
            if orphan is not None:
                await asyncio.shield(orphan)
            self._held = []
            try:
                await self._loop.run_in_executor(self.executor, self._consumer.close)
            finally:
                self._closed = True
                self.executor.shutdown(wait=False)
