"""``confluent_kafka.error``'s module path: the serializing clients' errors (defined in
``kafka_fast.serialization.errors``) and the exceptions they build on."""

from .serialization.errors import (
    ConsumeError,
    KafkaError,
    KafkaException,
    KeyDeserializationError,
    KeySerializationError,
    ProduceError,
    SerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)

__all__ = ["ConsumeError", "KafkaError", "KafkaException", "KeyDeserializationError",
           "KeySerializationError", "ProduceError", "SerializationError",
           "ValueDeserializationError", "ValueSerializationError"]
