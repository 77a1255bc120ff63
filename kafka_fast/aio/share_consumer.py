"""``AIOShareConsumer``: the ShareConsumer (KIP-932) for asyncio programs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ..message import Message
from ..share import AcknowledgeType, Messages, ShareConsumer
from ..topic_partition import TopicPartition
from .base import AIOConsumerBase
from .callbacks import on_loop, wrap_config


class AIOShareConsumer(AIOConsumerBase):
    """A ``ShareConsumer`` driven from asyncio; create it inside a running event loop.

    Every call runs on one worker thread, one at a time, so the loop never blocks and the
    share consumer sees a single thread. ``poll`` waits in slices of ``reads.SLICE`` seconds;
    a cancelled ``poll`` loses nothing: the records its last slice acquired (or the error it
    raised) are handed out by the next ``poll``, as ``AIOConsumer`` does. ``close()`` while a
    poll is in flight stops it within one slice. Callbacks (``error_cb``, ``throttle_cb``,
    ``stats_cb`` in the configuration, and the acknowledgement commit callback) may be
    coroutine functions; they run on the loop.
    """

    CLOSED = "ShareConsumer closed"

    def __init__(self, consumer_conf: dict[str, Any]) -> None:
        super().__init__(None, "kafka_fast-aio-share-consumer")
        try:
            self._consumer = ShareConsumer(wrap_config(self._loop, consumer_conf, self))
        except BaseException:
            self._thread.shutdown(wait=False)
            raise

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
        return await self._read(self._consumer.poll, timeout,
                                lambda held: Messages(held.take_messages(sys.maxsize)))

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
        nothing. A poll in flight ends within ``reads.SLICE`` seconds; records a cancelled
        poll kept are released by the broker."""
        await self._close(self._consumer.close)
