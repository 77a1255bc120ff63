"""``AsyncDeserializingConsumer``: an AIOConsumer whose ``poll()`` and ``consume()`` turn keys
and values into objects with deserializers, as confluent-kafka's
``confluent_kafka.aio.AsyncDeserializingConsumer`` does."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

from ..message import Message
from ..serialization import MessageField
from ..serialization.config import maybe_await, start_async_client
from ..serialization.consumer import check_event, key_context
from ..serialization.errors import KeyDeserializationError, ValueDeserializationError
from .awaited import AwaitedInit
from .consumer import AIOConsumer

__all__ = ["AsyncDeserializingConsumer"]


class AsyncDeserializingConsumer(AwaitedInit, AIOConsumer):
    """An ``AIOConsumer`` whose ``poll()`` and ``consume()`` return messages with deserialized
    key and value; created with ``consumer = await AsyncDeserializingConsumer(conf, **kwargs)``
    inside a running loop.

    Configuration: everything ``AIOConsumer`` takes (``kwargs`` too: ``max_workers``,
    ``executor``), plus ``key.deserializer`` / ``value.deserializer`` (callables
    ``(bytes | None, SerializationContext)`` returning the object or an awaitable of it: a
    plain deserializer such as ``StringDeserializer`` runs on the loop; an asyncio one is
    awaited) or ``key.deserializer.builder`` / ``value.deserializer.builder`` (a
    ``DeserializerBuilder`` whose ``build()`` may be awaitable: built here, closed by
    ``close()``). A deserializer failure raises ``KeyDeserializationError`` /
    ``ValueDeserializationError`` with the raw message as ``kafka_message``.
    ``consume_batch()`` and ``batches()`` stay columnar views of the raw bytes.
    """

    async def __init__(self, conf: Mapping[str, Any],  # type: ignore[misc]
                       **kwargs: Any) -> None:
        self._serdes = await start_async_client(
            functools.partial(super().__init__, **kwargs), self.cluster_id, conf,
            "key.deserializer", "value.deserializer")
        self._key_deserializer = self._serdes.key
        self._value_deserializer = self._serdes.value

    async def close(self) -> None:
        """Close the consumer (see ``AIOConsumer.close``), then the deserializers it built from
        builders (those passed ready-made stay the application's)."""
        await super().close()
        await self._serdes.aclose()

    async def poll(self, timeout: float | None = -1) -> Message | None:
        """The next message, deserialized, or None after ``timeout`` seconds (-1: wait); an
        error event raises ``ConsumeError``."""
        msg = await super().poll(timeout)
        if msg is None:
            return None
        check_event(msg)
        return (await self._deserialized([msg]))[0]

    async def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list:
        """Up to ``num_messages`` messages, deserialized; error events are returned as they
        are (check ``error()``), so the rest of the batch is not lost. When a message fails to
        deserialize, the ones before it are returned, and the next call starts with it."""
        return await self._deserialized(await super().consume(num_messages, timeout))

    async def _deserialized(self, msgs: list[Message]) -> list[Message]:
        """``msgs`` with deserialized keys and values. Cancelled meanwhile, the messages go
        back to the consumer (the next read returns them); a failure is raised for the first
        message (the others go back) or ends the list before the failing one."""
        fields: list[tuple[Any, Any] | None] = []
        try:
            for msg in msgs:
                fields.append(None if msg.error() is not None else await self._fields(msg))
        except asyncio.CancelledError:
            self._put_back(msgs)
            raise
        except Exception:
            failed = len(fields)
            if failed == 0:
                self._put_back(msgs[1:])
                raise
            self._put_back(msgs[failed:])
            msgs = msgs[:failed]
        for msg, kv in zip(msgs, fields, strict=True):
            if kv is not None:
                msg.set_key(kv[0])
                msg.set_value(kv[1])
        return msgs

    async def _fields(self, msg: Message) -> tuple[Any, Any]:
        ctx = key_context(msg)
        key: Any = msg.key()
        if self._key_deserializer is not None:
            try:
                key = await maybe_await(self._key_deserializer(key, ctx))
            except Exception as exc:
                raise KeyDeserializationError(exc, kafka_message=msg) from exc
        value: Any = msg.value()
        if self._value_deserializer is not None:
            ctx.field = MessageField.VALUE
            try:
                value = await maybe_await(self._value_deserializer(value, ctx))
            except Exception as exc:
                raise ValueDeserializationError(exc, kafka_message=msg) from exc
        return key, value
