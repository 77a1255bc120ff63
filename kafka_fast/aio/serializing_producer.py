"""``AsyncSerializingProducer``: an AIOProducer that turns keys and values into bytes with
serializers, as confluent-kafka's ``confluent_kafka.aio.AsyncSerializingProducer`` does."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

from ..serialization import MessageField, SerializationContext
from ..serialization.config import maybe_await, start_async_client
from ..serialization.errors import KeySerializationError, ValueSerializationError
from ..serialization.producer import check_record
from .awaited import AwaitedInit
from .producer import AIOProducer

__all__ = ["AsyncSerializingProducer"]


class AsyncSerializingProducer(AwaitedInit, AIOProducer):
    """An ``AIOProducer`` whose ``produce()`` serializes ``key`` and ``value`` first; created
    with ``producer = await AsyncSerializingProducer(conf, **kwargs)`` inside a running loop.

    Configuration: everything ``AIOProducer`` takes (``kwargs`` too: ``max_workers``,
    ``executor``, ...), plus ``key.serializer`` / ``value.serializer`` (callables
    ``(obj, SerializationContext)`` returning bytes, None or an awaitable of them: a plain
    serializer such as ``StringSerializer`` runs on the loop, so keep it cheap; an asyncio one
    is awaited) or ``key.serializer.builder`` / ``value.serializer.builder`` (a
    ``SerializerBuilder`` whose ``build()`` may be awaitable: built here, closed by
    ``close()``). Serializers offering ``set_async_cluster_id_resolver`` get a coroutine
    function returning the cluster id.
    """

    async def __init__(self, conf: Mapping[str, Any],  # type: ignore[misc]
                       **kwargs: Any) -> None:
        self._serdes = await start_async_client(
            functools.partial(super().__init__, **kwargs), self.cluster_id, conf,
            "key.serializer", "value.serializer")
        self._key_serializer = self._serdes.key
        self._value_serializer = self._serdes.value

    async def close(self) -> None:
        """Close the producer (see ``AIOProducer.close``), then the serializers it built from
        builders (those passed ready-made stay the application's)."""
        await super().close()
        await self._serdes.aclose()

    async def produce(self, topic: str, key: Any = None, value: Any = None,  # type: ignore[override]
                      partition: int = -1, timestamp: int = 0,
                      headers: Any = None) -> asyncio.Future:
        """Serialize ``key`` then ``value`` and queue the record; returns a future resolving to
        the delivered ``Message`` (see ``AIOProducer.produce``).

        A serializer failure raises ``KeySerializationError`` / ``ValueSerializationError``
        and nothing is queued; a closed producer or a topic that is not a str is refused
        before the serializers run. ``headers`` reach the serializers (in the
        ``SerializationContext``) and the record.
        """
        check_record(self._closed, topic)
        ctx = SerializationContext(topic, MessageField.KEY, headers)
        if self._key_serializer is not None:
            try:
                key = await maybe_await(self._key_serializer(key, ctx))
            except Exception as exc:
                raise KeySerializationError(exc) from exc
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = await maybe_await(self._value_serializer(value, ctx))
            except Exception as exc:
                raise ValueSerializationError(exc) from exc
        return await super().produce(topic, value, key, partition, None, timestamp, headers)
