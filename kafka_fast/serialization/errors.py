"""Errors of the serializing clients, with confluent-kafka's names (``confluent_kafka.error``).

Each wraps a ``KafkaError`` (``.code``, ``.name``), the original ``exception`` and, for
consume errors, the raw ``kafka_message`` whose key or value could not be deserialized.
"""

from __future__ import annotations

from typing import Any

from ..errors import KafkaError, KafkaException
from . import SerializationError

__all__ = [
    "ConsumeError",
    "KafkaError",
    "KafkaException",
    "KeyDeserializationError",
    "KeySerializationError",
    "ProduceError",
    "SerializationError",
    "ValueDeserializationError",
    "ValueSerializationError",
]


class _KafkaClientError(KafkaException):
    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None,
                 kafka_message: Any = None) -> None:
        super().__init__(kafka_error)
        self.exception = exception
        self.kafka_message = kafka_message

    @property
    def code(self) -> int:
        return self.args[0].code()

    @property
    def name(self) -> str:
        return self.args[0].name()


class ConsumeError(_KafkaClientError):
    """An error met while consuming; ``kafka_message`` holds the message as received."""


class KeyDeserializationError(ConsumeError, SerializationError):
    """A message key could not be deserialized (code ``_KEY_DESERIALIZATION``)."""

    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError.of(KafkaError._KEY_DESERIALIZATION, str(exception)),
                         exception=exception, kafka_message=kafka_message)


class ValueDeserializationError(ConsumeError, SerializationError):
    """A message value could not be deserialized (code ``_VALUE_DESERIALIZATION``)."""

    def __init__(self, exception: BaseException | None = None, kafka_message: Any = None) -> None:
        super().__init__(KafkaError.of(KafkaError._VALUE_DESERIALIZATION, str(exception)),
                         exception=exception, kafka_message=kafka_message)


class ProduceError(_KafkaClientError):
    """An error met while producing."""

    def __init__(self, kafka_error: KafkaError, exception: BaseException | None = None) -> None:
        super().__init__(kafka_error, exception, None)


class KeySerializationError(ProduceError, SerializationError):
    """A message key could not be serialized (code ``_KEY_SERIALIZATION``)."""

    def __init__(self, exception: BaseException | None = None) -> None:
        super().__init__(KafkaError.of(KafkaError._KEY_SERIALIZATION, str(exception)),
                         exception=exception)


class ValueSerializationError(ProduceError, SerializationError):
    """A message value could not be serialized (code ``_VALUE_SERIALIZATION``)."""

    def __init__(self, exception: BaseException | None = None) -> None:
        super().__init__(KafkaError.of(KafkaError._VALUE_SERIALIZATION, str(exception)),
                         exception=exception)
