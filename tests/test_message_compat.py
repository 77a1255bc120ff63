"""Message accessors behave as confluent-kafka's."""

from __future__ import annotations

import confluent_kafka

from kafka_fast import KafkaError, Message


def test_setters_and_deserialized_accessors_match_confluent_kafka():
    ours, theirs = Message("t", 1, 5, b"k", b"v"), confluent_kafka.Message("t", 1, 5, b"k", b"v")
    for msg in (ours, theirs):
        msg.set_topic("other")
        msg.set_key({"parsed": 1})
        msg.set_value(42)
    assert (ours.topic(), ours.key(), ours.value()) == (theirs.topic(), theirs.key(),
                                                       theirs.value())
    assert ours.deserialized_key() == theirs.deserialized_key() == {"parsed": 1}
    assert ours.deserialized_value() == theirs.deserialized_value() == 42
    assert ours.delivery_count() is None and theirs.delivery_count() is None
    ours.set_error(KafkaError(KafkaError._PARTITION_EOF))
    theirs.set_error(confluent_kafka.KafkaError(confluent_kafka.KafkaError._PARTITION_EOF))
    assert ours.error().code() == theirs.error().code() == KafkaError._PARTITION_EOF


def test_positional_parameters_follow_confluent_kafka():
    args = ("t", 2, 7, b"k", b"v", [("h", b"1")], KafkaError(KafkaError._PARTITION_EOF),
            (1, 1700000000000))
    ours = Message(*args, 0.25, 3)
    theirs = confluent_kafka.Message(*args[:6],
                                     confluent_kafka.KafkaError(KafkaError._PARTITION_EOF),
                                     *args[7:], 0.25, 3)
    for msg in (ours, theirs):
        assert (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                msg.headers(), msg.timestamp(), msg.latency(), msg.leader_epoch()) == (
            "t", 2, 7, b"k", b"v", [("h", b"1")], (1, 1700000000000), 0.25, 3)
        assert msg.error().code() == KafkaError._PARTITION_EOF
