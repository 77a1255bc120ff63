"""The names user code imports from confluent-kafka's compiled module ``confluent_kafka.cimpl``
(``from confluent_kafka.cimpl import Message``), here as kafka_fast's own objects.

confluent-kafka's admin constants of that module (``ACL_OPERATION_*``, ``RESOURCE_*``,
``CONFIG_SOURCE_*``, ...) are not repeated: its ``confluent_kafka.admin`` wraps them in the
enums ``kafka_fast.admin`` has.
"""

from __future__ import annotations

from . import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    ConcurrentModificationException,
    Consumer,
    IllegalStateException,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    ShareConsumer,
    TopicPartition,
    Uuid,
    consistent,
    fnv1a,
    libversion,
    murmur2,
    version,
)
from .admin import NewPartitions, NewTopic

__all__ = [
    "OFFSET_BEGINNING", "OFFSET_END", "OFFSET_INVALID", "OFFSET_STORED",
    "TIMESTAMP_CREATE_TIME", "TIMESTAMP_LOG_APPEND_TIME", "TIMESTAMP_NOT_AVAILABLE",
    "ConcurrentModificationException", "Consumer", "IllegalStateException", "KafkaError",
    "KafkaException", "Message", "NewPartitions", "NewTopic", "Producer", "ShareConsumer",
    "TopicPartition", "Uuid", "consistent", "fnv1a", "libversion", "murmur2", "version",
]
