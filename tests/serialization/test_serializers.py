"""Built-in serializers: the same bytes and the same failures as confluent-kafka's."""

from __future__ import annotations

import math

import pytest
from confluent_kafka import serialization as ck

from kafka_fast import KafkaException
from kafka_fast import serialization as kf

INTS = [0, 1, -1, 2**31 - 1, -(2**31), 123456789]
DOUBLES = [0.0, -0.0, 1.5, -2.25e-300, 1.7976931348623157e308, math.inf, -math.inf]
STRINGS = ["", "hello", "Grüße, 世界 🎉", "a\x00b"]


@pytest.mark.parametrize("name, values", [
    ("IntegerSerializer", INTS), ("DoubleSerializer", DOUBLES), ("StringSerializer", STRINGS),
])
def test_serializers_write_the_same_bytes(name, values):
    ours, theirs = getattr(kf, name)(), getattr(ck, name)()
    ctx = kf.SerializationContext("t", kf.MessageField.VALUE)
    for value in [*values, None]:
        assert ours(value, ctx) == theirs(value, None)


@pytest.mark.parametrize("name, values", [
    ("IntegerDeserializer", INTS), ("DoubleDeserializer", DOUBLES),
    ("StringDeserializer", STRINGS),
])
def test_deserializers_read_back_the_same_objects(name, values):
    ours = getattr(kf, name)()
    theirs = getattr(ck, name)()
    writer = getattr(ck, name.replace("Deserializer", "Serializer"))()
    for value in values:
        data = writer(value, None)
        assert ours(data) == theirs(data, None) == value
    assert ours(None) is None


def test_nan_round_trips():
    data = kf.DoubleSerializer()(math.nan)
    assert data == ck.DoubleSerializer()(math.nan, None)
    assert math.isnan(kf.DoubleDeserializer()(data))


@pytest.mark.parametrize("call, value", [
    (kf.IntegerSerializer(), 2**31),
    (kf.IntegerSerializer(), "7"),
    (kf.DoubleSerializer(), "x"),
    (kf.IntegerDeserializer(), b"\x00\x01"),
    (kf.DoubleDeserializer(), b"\x00" * 9),
    (kf.StringDeserializer(), b"\xff\xfe\xfa"),
    (kf.StringSerializer("ascii"), "é"),
    (kf.StringSerializer(), 42),
])
def test_failures_raise_serialization_error(call, value):
    with pytest.raises(kf.SerializationError) as info:
        call(value)
    assert isinstance(info.value, KafkaException)
    assert str(info.value.args[0].str())


def test_string_codecs_and_clear_type_errors():
    assert kf.StringSerializer("utf_16_be")("é") == ck.StringSerializer("utf_16_be")("é", None)
    assert kf.StringDeserializer("latin_1")(b"\xe9") == "é"
    with pytest.raises(kf.SerializationError, match="takes a str, not int"):
        kf.StringSerializer()(42)


def test_context_and_fields_match_confluent_kafka():
    ctx = kf.SerializationContext("orders", kf.MessageField.KEY, [("h", b"1")])
    assert (ctx.topic, ctx.field, ctx.headers) == ("orders", "key", [("h", b"1")])
    assert [str(f) for f in kf.MessageField] == [str(f) for f in ck.MessageField]
    with pytest.raises(NotImplementedError):
        kf.Serializer()(b"x")
    with pytest.raises(NotImplementedError):
        kf.Deserializer()(b"x")
