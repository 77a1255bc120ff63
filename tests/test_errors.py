"""KafkaError values and exceptions, checked against the error-code table and librdkafka names."""

from __future__ import annotations

import pytest

from kafka_fast import CorruptRecordError, KafkaError, KafkaException, ProtocolError
from kafka_fast.errors.codes import BROKER_ERRORS


def test_every_broker_code_has_a_constant_and_retriable_flag():
    assert len(BROKER_ERRORS) > 120
    for code, (name, retriable, _message) in BROKER_ERRORS.items():
        assert getattr(KafkaError, name) == code
        assert KafkaError.of(code).retriable() is retriable


@pytest.mark.parametrize("code", [KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError._TRANSPORT,
                                  KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT])
def test_a_constructed_error_is_not_retriable_unless_told_as_confluent_kafkas(code):
    """KafkaError(code) defaults retriable() to False as confluent-kafka's constructor does;
    the errors kafka_fast reports (KafkaError.of) carry the code's flag."""
    import confluent_kafka

    theirs = confluent_kafka.KafkaError(code, "why")
    for ours in (KafkaError(code, "why"), KafkaError(code)):
        assert (ours.retriable(), ours.fatal(), ours.txn_requires_abort()) == (
            theirs.retriable(), theirs.fatal(), theirs.txn_requires_abort()) == (
            False, False, False)
    assert KafkaError(code, retriable=True).retriable() \
        is confluent_kafka.KafkaError(code, retriable=True).retriable() is True
    assert KafkaError.of(code, "why").retriable() is True
    assert KafkaException(code).args[0].retriable() is True


@pytest.mark.parametrize(
    "code, name",
    [(3, "UNKNOWN_TOPIC_OR_PART"), (10, "MSG_SIZE_TOO_LARGE"), (6, "NOT_LEADER_OR_FOLLOWER"),
     (-192, "_MSG_TIMED_OUT"), (-195, "_TRANSPORT"), (-187, "_ALL_BROKERS_DOWN"),
     (-191, "_PARTITION_EOF"), (-185, "_TIMED_OUT"), (-169, "_AUTHENTICATION")],
)
def test_names_follow_librdkafka(code, name):
    assert KafkaError(code).name() == name
    assert getattr(KafkaError, name) == code


def test_kafka_names_remain_as_aliases():
    assert KafkaError.UNKNOWN_TOPIC_OR_PARTITION == KafkaError.UNKNOWN_TOPIC_OR_PART == 3
    assert KafkaError.MESSAGE_TOO_LARGE == KafkaError.MSG_SIZE_TOO_LARGE == 10
    assert KafkaError.NOT_LEADER_FOR_PARTITION == 6


def test_error_value_semantics():
    err = KafkaError(KafkaError.PRODUCER_FENCED, "fenced", fatal=True)
    assert err == 90 and err == KafkaError(90) and hash(err) == hash(90)
    assert err.fatal() and not err.retriable() and not err.txn_requires_abort()
    assert err.str() == "fenced"
    assert repr(err) == 'KafkaError{code=PRODUCER_FENCED,val=90,str="fenced"}'
    assert KafkaError(14).str().startswith("Broker: The coordinator is loading")


def test_exceptions_carry_the_error():
    exc = KafkaException(KafkaError._TIMED_OUT, "waited 5 s")
    assert exc.args[0].code() == -185 and exc.args[0].str() == "waited 5 s"
    corrupt = CorruptRecordError("CRC mismatch", 61)
    assert isinstance(corrupt, KafkaException)
    assert corrupt.args[0].code() == KafkaError.CORRUPT_MESSAGE and corrupt.position == 61
    assert "at byte 61" in corrupt.args[0].str()
    assert ProtocolError("short frame").args[0].code() == KafkaError._BAD_MSG


def test_every_confluent_kafka_error_constant_exists_with_its_value():
    import confluent_kafka

    theirs = {n: getattr(confluent_kafka.KafkaError, n) for n in dir(confluent_kafka.KafkaError)
              if n.isupper() or (n.startswith("_") and n[1:].isupper())}
    assert len(theirs) > 150
    ours = {n: getattr(KafkaError, n, None) for n in theirs}
    assert {n: v for n, v in ours.items() if v != theirs[n]} == {}


def test_str_of_an_error_matches_confluent_kafka():
    import confluent_kafka

    for code in (KafkaError._MSG_TIMED_OUT, KafkaError.UNKNOWN_TOPIC_OR_PART,
                 KafkaError.REBOOTSTRAP_REQUIRED):
        theirs = str(confluent_kafka.KafkaError(code, "a reason"))
        assert str(KafkaError(code, "a reason")) == theirs
        assert KafkaError(code, "a reason").str() == "a reason"
