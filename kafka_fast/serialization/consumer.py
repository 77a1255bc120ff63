"""``DeserializingConsumer``: a Consumer whose ``poll()`` turns keys and values into objects
with deserializers, as confluent-kafka's does (``key.deserializer`` / ``value.deserializer``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..consumer import Consumer
from ..message import Message
from . import MessageField, SerializationContext
from .config import start_client
from .errors import ConsumeError, KeyDeserializationError, ValueDeserializationError

__all__ = ["DeserializingConsumer"]


class DeserializingConsumer(Consumer):
    """A Consumer whose ``poll()`` returns messages with deserialized key and value.

    Configuration: everything ``Consumer`` takes, plus ``key.deserializer`` and
    ``value.deserializer`` (callables ``(bytes | None, SerializationContext) -> object``;
    without one, the field stays bytes), or ``key.deserializer.builder`` /
    ``value.deserializer.builder`` (``DeserializerBuilder``: built here, closed by
    ``close()``). ``poll()`` raises ``ConsumeError`` for an error
    event and ``KeyDeserializationError`` / ``ValueDeserializationError`` (with the raw
    message as ``kafka_message``) when a deserializer fails; ``consume()`` is not offered.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._serdes = start_client(super().__init__, self.cluster_id, conf, "key.deserializer",
                                    "value.deserializer")
        self._key_deserializer = self._serdes.key
        self._value_deserializer = self._serdes.value

    def close(self) -> None:
        """Close the consumer, then the deserializers it built from builders (those passed
        ready-made stay the application's)."""
        super().close()
        self._serdes.close()

    def poll(self, timeout: float | None = -1) -> Message | None:  # type: ignore[override]
        """The next message, deserialized, or None when ``timeout`` seconds pass (-1: wait)."""
        msg = super().poll(timeout)
        if msg is None:
            return None
        check_event(msg)
        return self._deserialize(msg)

    def _deserialize(self, msg: Message) -> Message:
        ctx = key_context(msg)
        key: Any = msg.key()
        if self._key_deserializer is not None:
            try:
                key = self._key_deserializer(key, ctx)
            except Exception as exc:
                raise KeyDeserializationError(exc, kafka_message=msg) from exc
        value: Any = msg.value()
        if self._value_deserializer is not None:
            ctx.field = MessageField.VALUE
            try:
                value = self._value_deserializer(value, ctx)
            except Exception as exc:
                raise ValueDeserializationError(exc, kafka_message=msg) from exc
        msg.set_key(key)
        msg.set_value(value)
        return msg

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Not offered (as in confluent-kafka): use ``poll()``."""
        raise NotImplementedError("DeserializingConsumer.consume() is not offered: use poll()")


def check_event(msg: Message) -> None:
    """Raise ``ConsumeError`` (holding ``msg``) when ``msg`` is an error event."""
    error = msg.error()
    if error is not None:
        raise ConsumeError(error, kafka_message=msg)


def key_context(msg: Message) -> SerializationContext:
    """The context a message's key deserializer gets (its ``field`` becomes VALUE for the
    value's)."""
    return SerializationContext(msg.topic() or "", MessageField.KEY, msg.headers())
