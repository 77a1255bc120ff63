"""Small parts of confluent-kafka's API a migrated program meets, checked side by side with the
installed confluent-kafka: version functions, the group.id requirement, Message accessors
(as docs/migrating-from-confluent-kafka.md lists them)."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import confluent_kafka
import pytest
from harness import free_port

import kafka_fast

MIGRATING = Path(__file__).resolve().parents[1] / "docs" / "migrating-from-confluent-kafka.md"


def _version_int(text: str) -> int:
    """librdkafka's 0xMMmmrrxx for a release version string."""
    major, minor, revision = (int(p) for p in text.split("-")[0].split(".")[:3])
    return (major << 24) | (minor << 16) | (revision << 8) | 0xFF


def test_version_functions_have_confluent_kafkas_shapes():
    theirs, ours = confluent_kafka.version(), kafka_fast.version()
    assert type(ours) is type(theirs) is str
    assert ours == kafka_fast.__version__
    their_lib, our_lib = confluent_kafka.libversion(), kafka_fast.libversion()
    assert [type(v) for v in our_lib] == [type(v) for v in their_lib] == [str, int]
    # the integer follows librdkafka's layout: checked on confluent-kafka's own pair
    assert their_lib[1] == _version_int(their_lib[0])
    assert our_lib == (kafka_fast.__version__, _version_int(kafka_fast.__version__))


def test_consumer_without_group_id_is_refused_as_by_confluent_kafka():
    conf = {"bootstrap.servers": f"127.0.0.1:{free_port()}"}
    with pytest.raises(ValueError) as theirs:
        confluent_kafka.Consumer(dict(conf))
    with pytest.raises(ValueError) as ours:
        kafka_fast.Consumer(dict(conf))
    assert str(theirs.value) == "Failed to create consumer: group.id must be set"
    # kafka_fast's error is also a KafkaException, carrying the same words
    assert isinstance(ours.value, kafka_fast.KafkaException)
    assert ours.value.args[0].code() == kafka_fast.KafkaError._INVALID_ARG
    assert ours.value.args[0].str() == str(theirs.value)


def _documented_accessors() -> list[str]:
    text = " ".join(MIGRATING.read_text(encoding="utf-8").split())
    match = re.search(r"`Message` accessors \(`([^`]*)`\)", text)
    assert match, "the Message accessor list is missing from the migrating guide"
    return [name.rstrip("()") for name in match.group(1).split()]


def test_documented_message_accessors_exist_in_both_clients():
    names = _documented_accessors()
    assert "topic" in names and "len" not in names
    for name in names:
        assert callable(getattr(confluent_kafka.Message, name, None)), f"confluent lacks {name}"
        assert callable(getattr(kafka_fast.Message, name, None)), f"kafka_fast lacks {name}"
    theirs = confluent_kafka.Message(topic="t", value=b"abc")
    ours = kafka_fast.Message(topic="t", value=b"abc")
    assert len(theirs) == len(ours) == 3
    assert len(confluent_kafka.Message(topic="t")) == len(kafka_fast.Message(topic="t")) == 0
    assert not hasattr(theirs, "len")


def test_cluster_id_and_sasl_credentials(broker):
    theirs = confluent_kafka.Producer(broker.client_config())
    producer = kafka_fast.Producer(broker.client_config())
    consumer = kafka_fast.Consumer(broker.client_config({"group.id": "cluster-id"}))
    try:
        expected = theirs.cluster_id(10)
        assert expected
        assert producer.cluster_id(10) == consumer.cluster_id(10) == expected
        producer.set_sasl_credentials("alice", "secret")
        with pytest.raises(TypeError, match="sasl.password"):
            consumer.set_sasl_credentials("alice", None)
    finally:
        producer.close()
        consumer.close()


def test_a_property_of_the_other_role_warns_and_is_ignored():
    with pytest.warns(UserWarning, match='"group.id" does not apply to a producer'):
        producer = kafka_fast.Producer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})
    producer.close(0)


@pytest.mark.parametrize("name", ["message.timeout.ms", "delivery.timeout.ms"])
def test_a_bad_value_is_reported_under_the_name_given(name):
    if name == "message.timeout.ms":  # librdkafka's own name for the setting
        with pytest.raises(confluent_kafka.KafkaException, match=f'"{name}"'):
            confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:1", name: "abc"})
    with pytest.raises(kafka_fast.KafkaException, match=f'"{name}"'):
        kafka_fast.Producer({"bootstrap.servers": "127.0.0.1:1", name: "abc"})


def test_producer_poll_without_a_timeout_waits_for_an_event():
    producer = kafka_fast.Producer({"bootstrap.servers": "127.0.0.1:1",
                                    "message.timeout.ms": 1000})
    reports = []
    try:
        producer.produce("t", b"x", on_delivery=lambda err, msg: reports.append(err.code()))
        while not reports:
            assert producer.poll() >= 1  # waits for an event: here errors, then the report
        assert reports == [kafka_fast.KafkaError._MSG_TIMED_OUT]
    finally:
        producer.close(0)


def test_produce_batch_positional_parameters_follow_confluent_kafka():
    import inspect

    ours = list(inspect.signature(kafka_fast.Producer.produce_batch).parameters)[1:5]
    assert ours == ["topic", "values", "partition", "on_delivery"]
    # confluent-kafka documents produce_batch(topic, messages, [partition], [on_delivery]).
    assert "produce_batch(topic, messages, [partition], [on_delivery])" in (
        confluent_kafka.Producer.produce_batch.__doc__)


def test_calls_after_close_raise_runtime_error_as_in_confluent_kafka():
    producer = kafka_fast.Producer({"bootstrap.servers": "127.0.0.1:1"})
    producer.close(0)
    for call in (lambda: producer.produce("t", b"x"), lambda: producer.poll(0),
                 lambda: producer.flush(0), lambda: producer.produce_batch("t", [b"x"]),
                 lambda: producer.list_topics(timeout=0.1), lambda: producer.purge()):
        with pytest.raises(RuntimeError, match="Producer has been closed"):
            call()
    assert len(producer) == 0
    producer.close()  # a second close does nothing
    consumer = kafka_fast.Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})
    consumer.close()
    for call in (lambda: consumer.poll(0), lambda: consumer.consume(1, 0),
                 lambda: consumer.consume_batch(1, 0), lambda: consumer.commit()):
        with pytest.raises(RuntimeError, match="Consumer closed"):
            call()


# -- construction and list_topics() errors ---------------------------------------------------

def _closed_port_address() -> str:
    return f"127.0.0.1:{free_port()}"


@pytest.mark.parametrize("kind", ["Producer", "Consumer", "AdminClient"])
def test_list_topics_of_an_unreachable_cluster_ends_in_transport_like_confluent(kind):
    """Nothing listens at the address: after the time-out both clients raise _TRANSPORT
    "Failed to get metadata: Local: Broker transport failure", for one topic and for all."""
    from confluent_kafka.admin import AdminClient as TheirAdmin

    from kafka_fast.admin import AdminClient as OurAdmin

    classes = {"Producer": (confluent_kafka.Producer, kafka_fast.Producer),
               "Consumer": (confluent_kafka.Consumer, kafka_fast.Consumer),
               "AdminClient": (TheirAdmin, OurAdmin)}[kind]
    conf = {"bootstrap.servers": _closed_port_address()}
    if kind == "Consumer":
        conf["group.id"] = "g"
    seen = []
    for client_class in classes:
        client = client_class(dict(conf))
        try:
            for topic in (None, "some-topic"):
                started = time.monotonic()
                with pytest.raises((confluent_kafka.KafkaException,
                                    kafka_fast.KafkaException)) as info:
                    client.list_topics(topic, timeout=0.5)
                took = time.monotonic() - started
                err = info.value.args[0]
                seen.append((err.code(), err.str()))
                assert 0.4 <= took < 3.0, took
        finally:
            if kind == "Consumer":
                client.close()
    assert seen == [(kafka_fast.KafkaError._TRANSPORT,
                     "Failed to get metadata: Local: Broker transport failure")] * 4


@pytest.mark.parametrize("conf", ["bootstrap.servers=127.0.0.1:9", ["bootstrap.servers"], 9],
                         ids=["str", "list", "int"])
def test_a_configuration_that_is_not_a_dict_raises_type_error_like_confluent(conf):
    """confluent-kafka's Producer, Consumer and AdminClient raise TypeError; so do all of
    kafka_fast's clients (confluent's serializing ones fail with AttributeError instead)."""
    from confluent_kafka.admin import AdminClient as TheirAdmin

    from kafka_fast.admin import AdminClient as OurAdmin

    for client_class in (confluent_kafka.Producer, confluent_kafka.Consumer, TheirAdmin):
        with pytest.raises(TypeError, match="expected configuration dict"):
            client_class(conf)
    for client_class in (kafka_fast.Producer, kafka_fast.Consumer, OurAdmin):
        with pytest.raises(TypeError, match=f"expected configuration dict, got "
                                            f"{type(conf).__name__}"):
            client_class(conf)
    for client_class in (kafka_fast.SerializingProducer, kafka_fast.DeserializingConsumer):
        with pytest.raises(TypeError, match="configuration must be a dict"):
            client_class(conf)


@pytest.mark.parametrize("name", ["AIOProducer", "AIOConsumer", "AsyncSerializingProducer",
                                  "AsyncDeserializingConsumer"])
def test_aio_clients_refuse_a_configuration_that_is_not_a_dict(name):
    import kafka_fast.aio

    client_class = getattr(kafka_fast.aio, name)

    async def build() -> None:
        await client_class("bootstrap.servers=127.0.0.1:9")

    with pytest.raises(TypeError, match="configuration must be a dict, not str"):
        asyncio.run(build())


def test_cimpl_names_are_kafka_fasts_objects():
    """``from confluent_kafka.cimpl import Message`` and the like, as kafka_fast.cimpl."""
    import confluent_kafka.cimpl

    import kafka_fast.admin
    import kafka_fast.cimpl

    theirs = {n for n in dir(confluent_kafka.cimpl) if not n.startswith("_")}
    ours = set(kafka_fast.cimpl.__all__)
    assert ours <= theirs
    for name in ours:
        obj = getattr(kafka_fast.cimpl, name)
        assert obj is getattr(kafka_fast, name, None) or obj is getattr(kafka_fast.admin, name)
    # what is left out is confluent-kafka's admin integer constants (kafka_fast.admin's enums)
    prefixes = ("ACL_", "ALTER_CONFIG_", "CONFIG_SOURCE_", "CONSUMER_GROUP_", "ELECTION_",
                "ISOLATION_LEVEL_", "OFFSET_SPEC_", "RESOURCE_", "SCRAM_", "SHARE_ACKNOWLEDGE_")
    assert sorted(n for n in theirs - ours if not n.startswith(prefixes)) == []
    msg = kafka_fast.cimpl.Message("t", 0, 5, b"k", b"v")
    assert (msg.topic(), msg.offset(), msg.value()) == ("t", 5, b"v")


def _consumer_calls(consumer, tp_cls) -> list:
    tp = tp_cls("t", 0)
    return [("subscribe", lambda: consumer.subscribe(["t"])), ("unsubscribe", consumer.unsubscribe),
            ("poll", consumer.poll), ("consume", consumer.consume),
            ("assign", lambda: consumer.assign([tp])), ("unassign", consumer.unassign),
            ("assignment", consumer.assignment), ("commit", consumer.commit),
            ("committed", lambda: consumer.committed([tp])),
            ("position", lambda: consumer.position([tp])),
            ("seek", lambda: consumer.seek(tp_cls("t", 0, 0))),
            ("get_watermark_offsets", lambda: consumer.get_watermark_offsets(tp)),
            ("store_offsets", lambda: consumer.store_offsets(offsets=[tp_cls("t", 0, 1)])),
            ("pause", lambda: consumer.pause([tp])), ("resume", lambda: consumer.resume([tp])),
            ("offsets_for_times", lambda: consumer.offsets_for_times([tp_cls("t", 0, 0)])),
            ("list_topics", consumer.list_topics),
            ("set_sasl_credentials", lambda: consumer.set_sasl_credentials("u", "p")),
            ("consumer_group_metadata", consumer.consumer_group_metadata),
            ("memberid", consumer.memberid),
            ("incremental_assign", lambda: consumer.incremental_assign([tp])),
            ("incremental_unassign", lambda: consumer.incremental_unassign([tp])),
            ("close", consumer.close)]


def _outcomes(calls) -> list:
    out = []
    for name, call in calls:
        try:
            out.append((name, "returned", call()))
        except RuntimeError as exc:
            out.append((name, "RuntimeError", str(exc)))
    return out


@pytest.mark.parametrize("state", ["uninitialized", "closed"])
def test_consumer_calls_before_init_and_after_close_match_confluent_kafka(state):
    """A subclass that skips Consumer.__init__, or a closed consumer: the same RuntimeErrors
    ("Consumer closed", "Handle has been closed" for the client-level calls) as confluent-kafka,
    and close() returns None."""
    seen = []
    for module in (confluent_kafka, kafka_fast):
        class Uninitialized(module.Consumer):  # type: ignore[name-defined,misc]
            def __init__(self, conf):
                pass

        if state == "uninitialized":
            consumer = Uninitialized({"group.id": "g"})
        else:
            consumer = module.Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})
            consumer.close()
        seen.append(_outcomes(_consumer_calls(consumer, module.TopicPartition)))
    assert seen[1] == seen[0]
    assert ("list_topics", "RuntimeError", "Handle has been closed") in seen[1]
    assert ("poll", "RuntimeError", "Consumer closed") in seen[1]
    assert seen[1][-1] == ("close", "returned", None)


@pytest.mark.parametrize("module", [confluent_kafka, kafka_fast], ids=["confluent", "kafka_fast"])
def test_a_broker_name_that_does_not_resolve_reaches_error_cb(module):
    """An unresolvable bootstrap host is reported through error_cb: _RESOLVE naming the host,
    then _ALL_BROKERS_DOWN, as librdkafka reports it."""
    errors: list = []
    producer = module.Producer({"bootstrap.servers": "no-such-host.invalid:9092",
                                "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(
            e.code() == module.KafkaError._ALL_BROKERS_DOWN for e in errors):
        producer.poll(0.1)
    codes = [e.code() for e in errors]
    assert codes[:2] == [module.KafkaError._RESOLVE, module.KafkaError._ALL_BROKERS_DOWN], errors
    assert "no-such-host.invalid" in errors[0].str()
