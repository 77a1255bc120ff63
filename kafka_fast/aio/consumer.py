"""``AIOConsumer``: the Consumer for asyncio programs."""

from __future__ import annotations

import concurrent.futures
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from ..consumer import Consumer, RecordBatchView
from .base import AIOConsumerBase
from .callbacks import on_loop, wrap_config
from .reads import Held

_Self = TypeVar("_Self", bound="AIOConsumer")


class AIOConsumer(AIOConsumerBase):
    """A ``Consumer`` driven from asyncio; create it inside a running event loop.

    Every call runs on one worker thread, one at a time, so the loop never blocks and the
    consumer sees a single application thread. ``max_workers`` is accepted for
    confluent-kafka's signature (at least 1) and changes nothing: one thread serves every call.
    Given an ``executor``, the calls run on one of its threads, taken until ``close()``. Callbacks (``error_cb``, ``throttle_cb``, ``stats_cb``, ``on_commit`` in the
    configuration; ``on_assign``/``on_revoke``/``on_lost`` of ``subscribe``, which receive
    this AIOConsumer) may be coroutine functions; they run on the loop, and consumer calls
    they await (``await consumer.assign(...)``) run at once inside the call that invoked them.

    A cancelled ``poll()``/``consume()``/``consume_batch()`` loses nothing: what its worker
    call still gets is handed out by the next read (unless ``assign``, ``seek``, ... moved
    that partition's position first). ``close()`` while a read is in flight
    stops that read within ``reads.SLICE`` seconds (it returns what it has: None, an empty
    list or an empty view) and then closes.
    """

    def __init__(self, consumer_conf: dict[str, Any], max_workers: int = 2,
                 executor: concurrent.futures.Executor | None = None) -> None:
        if executor is None and max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        super().__init__(executor, "kafka_fast-aio-consumer")
        self._consumer = Consumer(wrap_config(self._loop, consumer_conf, self))

    # -- consuming -------------------------------------------------------------------------------
    async def poll(self, timeout: float | None = -1) -> Any:
        """The next message or event, or None after ``timeout`` seconds (-1: wait)."""
        poll = self._consumer.poll

        def take(held: Held) -> Any:
            msgs = held.take_messages(1)
            return msgs[0] if msgs else None

        return await self._read(poll, timeout, take)

    async def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list:
        """Up to ``num_messages`` messages; the way to read many records per call."""
        consume = self._consumer.consume
        if not isinstance(num_messages, int) or not 0 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        return await self._read(lambda t: consume(num_messages, t), timeout,
                                lambda held: held.take_messages(num_messages))

    async def consume_batch(self, max_records: int = 100_000, timeout: float | None = 1.0,
                            headers: bool = False) -> Any:
        """Up to ``max_records`` records as one columnar ``RecordBatchView``."""
        consume_batch = self._consumer.consume_batch
        if isinstance(max_records, bool) or not isinstance(max_records, int):
            raise TypeError(f"max_records must be an int, not {type(max_records).__name__}")
        if max_records < 1:
            raise ValueError("max_records must be at least 1")

        def take(held: Held) -> Any:
            view = held.take_view(max_records, headers)
            return view if view is not None else RecordBatchView([], [], headers)

        return await self._read(lambda t: consume_batch(max_records, t, headers), timeout, take)

    async def batches(self, max_records: int = 100_000, timeout: float | None = 1.0,
                      headers: bool = False) -> AsyncIterator[Any]:
        """``RecordBatchView``s as records arrive (empty views are skipped), until the
        consumer is closed or the iterating task stops."""
        while not (self._closed or self._closing):
            view = await self.consume_batch(max_records, timeout, headers)
            if len(view):
                yield view

    # -- group and assignment ------------------------------------------------------------------
    async def subscribe(self, topics: list[str], on_assign: Callable | None = None,
                        on_revoke: Callable | None = None,
                        on_lost: Callable | None = None) -> None:
        """Join the group for ``topics``; rebalance callbacks get this AIOConsumer."""
        wrapped = [None if cb is None else on_loop(self._loop, cb, self, first_arg=self)
                   for cb in (on_assign, on_revoke, on_lost)]
        await self._call(self._consumer.subscribe, topics, *wrapped)
        self._held.drop()

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)
        self._held.drop()

    async def assign(self, partitions: list) -> None:
        await self._call(self._consumer.assign, partitions)
        self._held.drop()

    async def unassign(self) -> None:
        await self._call(self._consumer.unassign)
        self._held.drop()

    async def incremental_assign(self, partitions: list) -> None:
        await self._call(self._consumer.incremental_assign, partitions)

    async def incremental_unassign(self, partitions: list) -> None:
        await self._call(self._consumer.incremental_unassign, partitions)
        self._held.drop(partitions)

    async def assignment(self) -> list:
        return await self._call(self._consumer.assignment)

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(lambda: self._consumer.commit(*args, **kwargs))

    async def committed(self, partitions: list, timeout: float | None = None) -> list:
        return await self._call(self._consumer.committed, partitions, timeout)

    async def position(self, partitions: list) -> list:
        return await self._call(self._consumer.position, partitions)

    async def store_offsets(self, *args: Any, **kwargs: Any) -> None:
        await self._call(lambda: self._consumer.store_offsets(*args, **kwargs))

    async def seek(self, partition: Any) -> None:
        await self._call(self._consumer.seek, partition)
        self._held.drop([partition])

    async def pause(self, partitions: list) -> None:
        await self._call(self._consumer.pause, partitions)

    async def resume(self, partitions: list) -> None:
        await self._call(self._consumer.resume, partitions)

    async def get_watermark_offsets(self, partition: Any, timeout: float | None = None,
                                    cached: bool = False) -> tuple[int, int]:
        return await self._call(self._consumer.get_watermark_offsets, partition, timeout, cached)

    async def offsets_for_times(self, partitions: list, timeout: float | None = None) -> list:
        return await self._call(self._consumer.offsets_for_times, partitions, timeout)

    async def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        return await self._call(self._consumer.list_topics, topic, timeout)

    async def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster id from broker metadata (None if ``timeout`` seconds pass first)."""
        return await self._call(self._consumer.cluster_id, timeout)

    async def set_sasl_credentials(self, username: str, password: str) -> None:
        """SASL PLAIN/SCRAM credentials for the next logins; open connections keep theirs."""
        await self._call(self._consumer.set_sasl_credentials, username, password)

    def metrics(self) -> dict[str, int | float]:
        """The consumer's flat metrics snapshot (``Consumer.metrics``; quick, not awaited)."""
        return self._consumer.metrics()

    async def consumer_group_metadata(self) -> Any:
        return await self._call(self._consumer.consumer_group_metadata)

    # -- lifecycle ------------------------------------------------------------------------------
    async def close(self) -> None:
        """Leave the group (committing if auto commit is on) and release the consumer.

        A read in flight ends within ``reads.SLICE`` seconds, returning what it has; reads
        and calls made from now on raise ``RuntimeError("Consumer closed")``.
        """
        await self._close(self._consumer.close)

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
