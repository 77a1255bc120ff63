"""Serializers and deserializers with confluent-kafka's names and behaviour.

``Serializer``/``Deserializer`` are the base classes (callables ``(obj, ctx) -> bytes`` and
``(bytes, ctx) -> obj``); the built-in ones convert strings (any Python codec, UTF-8 by
default), 32-bit signed big-endian integers and 64-bit big-endian doubles. ``None`` always maps
to ``None`` (a null key or value). Failures raise ``SerializationError``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import Enum
from typing import Any

from ..errors import KafkaException

__all__ = [
    "Deserializer",
    "DeserializerBuilder",
    "DoubleDeserializer",
    "DoubleSerializer",
    "IntegerDeserializer",
    "IntegerSerializer",
    "MessageField",
    "SerializationContext",
    "SerializationError",
    "Serializer",
    "SerializerBuilder",
    "StringDeserializer",
    "StringSerializer",
]

_INT = struct.Struct(">i")
_DOUBLE = struct.Struct(">d")


class MessageField(str, Enum):
    """Which part of a message a serializer is working on."""

    NONE = "none"
    KEY = "key"
    VALUE = "value"

    def __str__(self) -> str:
        return str(self.value)


class SerializationContext:
    """What a serializer may want to know: the topic, the field and the message headers."""

    def __init__(self, topic: str, field: MessageField, headers: Any = None) -> None:
        self.topic = topic
        self.field = field
        self.headers = headers


class SerializationError(KafkaException):
    """A value could not be serialized or deserialized."""


class Serializer:
    """Base class: a callable turning an object into bytes (or None)."""

    __slots__: list[str] = []

    def __call__(self, obj: Any, ctx: SerializationContext | None = None) -> bytes | None:
        raise NotImplementedError

    def set_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """Receives a callable returning the cluster id (unused by the built-in serializers)."""

    def close(self) -> None:
        """Releases what the serializer holds (nothing for the built-in ones)."""


class Deserializer:
    """Base class: a callable turning bytes (or None) into an object."""

    __slots__: list[str] = []

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> Any:
        raise NotImplementedError

    def set_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """Receives a callable returning the cluster id (unused by the built-in deserializers)."""

    def close(self) -> None:
        """Releases what the deserializer holds (nothing for the built-in ones)."""


class SerializerBuilder:
    """Base class of builders that make a serializer when a ``SerializingProducer`` is
    created (``key.serializer.builder`` / ``value.serializer.builder``)."""

    __slots__: list[str] = []

    def build(self, conf: dict[str, Any], is_key: bool) -> tuple[Serializer, dict[str, Any]]:
        """The serializer, and the client configuration less what the builder took."""
        raise NotImplementedError


class DeserializerBuilder:
    """Base class of builders that make a deserializer when a ``DeserializingConsumer`` is
    created (``key.deserializer.builder`` / ``value.deserializer.builder``)."""

    __slots__: list[str] = []

    def build(self, conf: dict[str, Any], is_key: bool) -> tuple[Deserializer, dict[str, Any]]:
        """The deserializer, and the client configuration less what the builder took."""
        raise NotImplementedError


def _pack(packer: struct.Struct, obj: Any) -> bytes | None:
    if obj is None:
        return None
    try:
        return packer.pack(obj)
    except struct.error as exc:
        raise SerializationError(str(exc)) from None


def _unpack(packer: struct.Struct, value: bytes | None) -> Any:
    if value is None:
        return None
    try:
        return packer.unpack(value)[0]
    except struct.error as exc:
        raise SerializationError(str(exc)) from None


class IntegerSerializer(Serializer):
    """A 32-bit signed integer as 4 big-endian bytes (Java's IntegerSerializer)."""

    def __call__(self, obj: int | None, ctx: SerializationContext | None = None) -> bytes | None:
        return _pack(_INT, obj)


class IntegerDeserializer(Deserializer):
    """4 big-endian bytes as a 32-bit signed integer."""

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> int | None:
        return _unpack(_INT, value)


class DoubleSerializer(Serializer):
    """A float as 8 big-endian IEEE 754 bytes (Java's DoubleSerializer)."""

    def __call__(self, obj: float | None, ctx: SerializationContext | None = None) -> bytes | None:
        return _pack(_DOUBLE, obj)


class DoubleDeserializer(Deserializer):
    """8 big-endian IEEE 754 bytes as a float."""

    def __call__(self, value: bytes | None,
                 ctx: SerializationContext | None = None) -> float | None:
        return _unpack(_DOUBLE, value)


class StringSerializer(Serializer):
    """A str encoded with ``codec`` (any Python codec name; UTF-8 by default)."""

    __slots__ = ["codec"]

    def __init__(self, codec: str = "utf_8") -> None:
        self.codec = codec

    def __call__(self, obj: str | None, ctx: SerializationContext | None = None) -> bytes | None:
        if obj is None:
            return None
        if not isinstance(obj, str):
            raise SerializationError(f"StringSerializer takes a str, not {type(obj).__name__}")
        try:
            return obj.encode(self.codec)
        except (UnicodeError, LookupError) as exc:
            raise SerializationError(str(exc)) from None


class StringDeserializer(Deserializer):
    """Bytes decoded with ``codec`` (any Python codec name; UTF-8 by default)."""

    __slots__ = ["codec"]

    def __init__(self, codec: str = "utf_8") -> None:
        self.codec = codec

    def __call__(self, value: bytes | None, ctx: SerializationContext | None = None) -> str | None:
        if value is None:
            return None
        try:
            return bytes(value).decode(self.codec)
        except (UnicodeError, LookupError, TypeError) as exc:
            raise SerializationError(str(exc)) from None
