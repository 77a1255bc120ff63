"""``DeserializingShareConsumer``: a ShareConsumer whose ``poll()`` deserializes keys and
values in place, as confluent-kafka's does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import KafkaError
from ..message import Message
from ..serialization import MessageField, SerializationContext
from .consumer import ShareConsumer
from .model import Messages


class DeserializingShareConsumer(ShareConsumer):
    """A ShareConsumer with ``key.deserializer`` / ``value.deserializer``
    (``(bytes | None, SerializationContext) -> object``).

    A record whose key or value fails to deserialize stays in the batch with its raw bytes
    and ``error()`` set to ``_KEY_DESERIALIZATION`` / ``_VALUE_DESERIALIZATION``, so it can
    still be acknowledged (e.g. rejected).
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        conf = dict(conf)
        self._key_deserializer = conf.pop("key.deserializer", None)
        self._value_deserializer = conf.pop("value.deserializer", None)
        super().__init__(conf)

    def poll(self, timeout: float = -1) -> Messages:
        """The acquired records, each deserialized in place (see the class docstring)."""
        messages = super().poll(timeout)
        for msg in messages:
            if msg.error() is None:
                self._deserialize(msg)
        return messages

    def _deserialize(self, msg: Message) -> None:
        topic = msg.topic()
        if topic is None:
            raise TypeError("Message topic is None")
        ctx = SerializationContext(topic, MessageField.KEY, msg.headers())
        try:
            key: Any = msg.key()
            if self._key_deserializer is not None:
                key = self._key_deserializer(key, ctx)
        except Exception as exc:
            msg.set_error(KafkaError.of(KafkaError._KEY_DESERIALIZATION, str(exc)))
            return
        try:
            value: Any = msg.value()
            if self._value_deserializer is not None:
                ctx.field = MessageField.VALUE
                value = self._value_deserializer(value, ctx)
        except Exception as exc:
            msg.set_error(KafkaError.of(KafkaError._VALUE_DESERIALIZATION, str(exc)))
            return
        msg.set_key(key)
        msg.set_value(value)
