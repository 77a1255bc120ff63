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


def _fields(msg) -> tuple:
    return (msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers(),
            msg.error(), msg.timestamp(), msg.latency(), msg.leader_epoch(),
            msg.delivery_count(), len(msg))


def test_construction_pickling_and_equality_match_confluent_kafka():
    import pickle

    cases = [(), ("t", 1, 2, b"k", b"v", [("h", b"1")], None, (1, 4), 5.67, 3, 5),
             ("t", 0, 0, None, None, None, None, None, -1.0, -1, -1), ("t", 1, 2, "k", "v", [])]
    for args in cases:
        ours, theirs = Message(*args), confluent_kafka.Message(*args)
        assert _fields(ours) == _fields(theirs), args
        assert ours.__reduce__()[1] == theirs.__reduce__()[1], args
        back, their_back = pickle.loads(pickle.dumps(ours)), pickle.loads(pickle.dumps(theirs))
        assert type(back) is Message and back is not ours
        assert _fields(back) == _fields(their_back) == _fields(theirs)
        assert back == ours and (back == Message(*args)) == (their_back == theirs)
    headers = []
    assert Message("t", headers=headers).headers() is headers  # as given, as confluent-kafka's
    assert Message("t", 1, 2, b"k") != Message("t", 1, 2, b"z")
    assert Message() != 1 and Message() is not None
    for count in (32768, -32769):
        for cls in (Message, confluent_kafka.Message):
            try:
                cls("t", 0, 0, None, None, None, None, (0, 0), -1.0, -1, count)
            except OverflowError:
                continue
            raise AssertionError(f"{cls} took delivery_count {count}")


def test_positions_and_refused_arguments_match_confluent_kafka():
    """Negative positions are "none" (pickled as -1 / -1001 / -1.0), integers are required
    where confluent-kafka requires them, and both refuse the same wrong types."""
    for kwargs in ({"partition": -5}, {"offset": -5}, {"latency": -0.5}, {"leader_epoch": -3},
                   {"delivery_count": -3}, {"partition": True, "offset": 0},
                   {"timestamp": (5, -1)}, {"latency": 0.0, "leader_epoch": 0}):
        ours, theirs = Message("t", **kwargs), confluent_kafka.Message("t", **kwargs)
        assert _fields(ours) == _fields(theirs), kwargs
        assert ours.__reduce__()[1] == theirs.__reduce__()[1], kwargs
    for args in (("t", "x"), ("t", 1, 2.5), ("t", None), ("t", 1, 2, None, None, None, None, [1, 2]),
                 ("t", 1, 2, None, None, None, None, (1,)),
                 ("t", 1, 2, None, None, None, None, (1, 2), "l"),
                 ("t", 1, 2, None, None, None, None, (1, 2), 0.5, "e")):
        for cls in (Message, confluent_kafka.Message):
            try:
                cls(*args)
            except TypeError:
                continue
            raise AssertionError(f"{cls} took {args}")
    # A timestamp of non-integers: confluent-kafka 2.16 raises SystemError (its C code leaves
    # the conversion's error set); kafka_fast says what is wrong.
    for stamp in ((1, 2.0), ("a", 2)):
        try:
            Message("t", 1, 2, None, None, None, None, stamp)
        except TypeError as exc:
            assert "integer" in str(exc), exc
        else:
            raise AssertionError(f"took timestamp {stamp}")
    for args in (("t", 1 << 31), ("t", 0, 1 << 63)):
        for cls in (Message, confluent_kafka.Message):
            try:
                cls(*args)
            except OverflowError:
                continue
            raise AssertionError(f"{cls} took {args}")


def test_pickles_name_the_public_class_and_load_in_either_mode():
    """Compiled or pure, a Message pickles as ``kafka_fast.message.Message`` (where earlier
    releases' pickles point too): a pickle made in one mode loads in the other."""
    import os
    import pickle
    import subprocess
    import sys

    msg = Message("t", 3, 17, b"k", b"v", [("h", b"1")], None, (1, 1700000000000), 0.5, 4)
    data = pickle.dumps(msg)
    assert b"kafka_fast.message" in data and b"_native" not in data and b"_pure" not in data
    other = "0" if os.environ.get("KAFKA_FAST_NO_EXTENSIONS", "") not in ("", "0") else "1"
    done = subprocess.run(
        [sys.executable, "-c", "import pickle, sys; m = pickle.loads(sys.stdin.buffer.read()); "
         "print(type(m).__module__, m.offset(), m.headers(), m.latency(), m.leader_epoch()); "
         "sys.stdout.flush(); sys.stdout.buffer.write(pickle.dumps(m))"],
        input=data, capture_output=True, env={**os.environ, "KAFKA_FAST_NO_EXTENSIONS": other},
        timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    line, back = done.stdout.split(b"\n", 1)
    assert line.decode() == "kafka_fast.message 17 [('h', b'1')] 0.5 4"
    assert pickle.loads(back) == msg
