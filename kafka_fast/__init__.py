"""kafka_fast: a Kafka client for Python with a compiled record engine.

The public names are imported on first use, so ``import kafka_fast`` stays cheap and a
program that only needs the record engine does not load the network stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__, libversion, version
from .errors import (
    ConfigError,
    CorruptRecordError,
    KafkaError,
    KafkaException,
    ProtocolError,
)
from .message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
)
from .topic_partition import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TopicPartition,
)

if TYPE_CHECKING:
    # What the module __getattr__ below loads on first use, for type checkers (``X as X``:
    # an explicit re-export).
    from .admin import AdminClient as AdminClient
    from .admin.model import ConsumerGroupState as ConsumerGroupState
    from .admin.model import ConsumerGroupTopicPartitions as ConsumerGroupTopicPartitions
    from .admin.model import ConsumerGroupType as ConsumerGroupType
    from .admin.model import ElectionType as ElectionType
    from .admin.model import IsolationLevel as IsolationLevel
    from .admin.model import Node as Node
    from .admin.model import TopicCollection as TopicCollection
    from .admin.model import TopicPartitionInfo as TopicPartitionInfo
    from .admin.model import Uuid as Uuid
    from .codecs.crc import crc32c as crc32c
    from .codecs.crc import crc32c_impl as crc32c_impl
    from .consumer import Consumer as Consumer
    from .consumer import RecordBatchView as RecordBatchView
    from .message import Message as Message
    from .net.events import ThrottleEvent as ThrottleEvent
    from .producer import Producer as Producer
    from .producer.partitioners import consistent as consistent
    from .producer.partitioners import fnv1a as fnv1a
    from .producer.partitioners import murmur2 as murmur2
    from .serialization.consumer import DeserializingConsumer as DeserializingConsumer
    from .serialization.producer import SerializingProducer as SerializingProducer
    from .share import AcknowledgeType as AcknowledgeType
    from .share import ConcurrentModificationException as ConcurrentModificationException
    from .share import DeserializingShareConsumer as DeserializingShareConsumer
    from .share import IllegalStateException as IllegalStateException
    from .share import Messages as Messages
    from .share import ShareConsumer as ShareConsumer

_LAZY = {
    "crc32c": ("kafka_fast.codecs.crc", "crc32c"),
    "crc32c_impl": ("kafka_fast.codecs.crc", "crc32c_impl"),
    "Producer": ("kafka_fast.producer", "Producer"),
    "Consumer": ("kafka_fast.consumer", "Consumer"),
    "AdminClient": ("kafka_fast.admin", "AdminClient"),
    **{name: ("kafka_fast.admin.model", name) for name in (
        "ConsumerGroupState", "ConsumerGroupTopicPartitions", "ConsumerGroupType",
        "ElectionType", "IsolationLevel", "Node", "TopicCollection", "TopicPartitionInfo",
        "Uuid")},
    "RecordBatchView": ("kafka_fast.consumer", "RecordBatchView"),
    "Message": ("kafka_fast.message", "Message"),
    "SerializingProducer": ("kafka_fast.serialization.producer", "SerializingProducer"),
    "ThrottleEvent": ("kafka_fast.net.events", "ThrottleEvent"),
    "murmur2": ("kafka_fast.producer.partitioners", "murmur2"),
    "consistent": ("kafka_fast.producer.partitioners", "consistent"),
    "fnv1a": ("kafka_fast.producer.partitioners", "fnv1a"),
    "DeserializingConsumer": ("kafka_fast.serialization.consumer", "DeserializingConsumer"),
    **{name: ("kafka_fast.share", name) for name in (
        "AcknowledgeType", "ConcurrentModificationException", "DeserializingShareConsumer",
        "IllegalStateException", "Messages", "ShareConsumer")},
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'kafka_fast' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "__version__",
    "libversion",
    "version",
    "ConfigError",
    "CorruptRecordError",
    "KafkaError",
    "KafkaException",
    "Message",
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_INVALID",
    "OFFSET_STORED",
    "ProtocolError",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TIMESTAMP_NOT_AVAILABLE",
    "TopicPartition",
    *_LAZY,
]
