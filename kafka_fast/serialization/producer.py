"""``SerializingProducer``: a Producer that turns keys and values into bytes with serializers,
as confluent-kafka's does (``key.serializer`` / ``value.serializer`` in the configuration)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..producer import Producer
from ..producer.arguments import as_headers, as_partition, as_timestamp, as_topic
from . import MessageField, SerializationContext
from .config import start_client
from .errors import KeySerializationError, ValueSerializationError

__all__ = ["SerializingProducer"]


class SerializingProducer(Producer):
    """A Producer whose ``produce()`` serializes ``key`` and ``value`` first.

    Configuration: everything ``Producer`` takes, plus ``key.serializer`` and
    ``value.serializer`` (callables ``(obj, SerializationContext) -> bytes | None``; without
    one, the field must already be bytes, str or None), or ``key.serializer.builder`` /
    ``value.serializer.builder`` (``SerializerBuilder``: built here, closed by ``close()``). A serializer failure raises
    ``KeySerializationError`` / ``ValueSerializationError`` from ``produce()`` and nothing is
    queued.
    """

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._serdes = start_client(super().__init__, self.cluster_id, conf, "key.serializer",
                                    "value.serializer")
        self._key_serializer = self._serdes.key
        self._value_serializer = self._serdes.value

    def close(self, timeout: float | None = None) -> None:
        """Close the producer (see ``Producer.close``), then the serializers it built from
        builders (those passed ready-made stay the application's)."""
        super().close(timeout)
        self._serdes.close()

    def produce(self, topic: str, key: Any = None, value: Any = None,  # type: ignore[override]
                partition: int = -1, on_delivery: Any = None, timestamp: int = 0,
                headers: Any = None) -> None:
        """Serialize ``key`` then ``value`` and queue the record (see ``Producer.produce``)."""
        check_record(self._closed, topic)
        # The record contract's checks come before the serializers, which may act (e.g.
        # register a schema) for a record that could then not be produced.
        as_partition(partition)
        as_timestamp(timestamp)
        if headers is not None:
            as_headers(headers)
        ctx = SerializationContext(topic, MessageField.KEY, headers)
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, ctx)
            except Exception as exc:
                raise KeySerializationError(exc) from exc
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, ctx)
            except Exception as exc:
                raise ValueSerializationError(exc) from exc
        super().produce(topic, value=value, key=key, partition=partition,
                        on_delivery=on_delivery, timestamp=timestamp, headers=headers)


def check_record(closed: bool, topic: object) -> None:
    """Refuse a record before its serializers run (they may act, e.g. register a schema, for a
    record that could not be produced): on a closed producer, or with a topic not a str."""
    if closed:
        raise RuntimeError("Producer has been closed")
    as_topic(topic)
