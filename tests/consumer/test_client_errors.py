"""Client-level errors reach the application: error_cb from poll()/consume()/consume_batch(),
bad arguments raise at once, and a consumer dropped without close() releases everything."""

from __future__ import annotations

import gc
import os
import socket
import threading
import time

import pytest
from harness.topics import create_topic, unique_topic

from kafka_fast import Consumer, KafkaError, KafkaException, TopicPartition


def _dead_address() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"127.0.0.1:{port}"


def _errors_for(make, poll, seconds: float) -> list:
    errors: list = []
    c = make(errors.append)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            poll(c)
    finally:
        c.close()
    return errors


@pytest.mark.parametrize("how", ["poll", "consume", "consume_batch"])
def test_unreachable_broker_reaches_error_cb_like_confluent(how):
    from confluent_kafka import Consumer as CK
    from confluent_kafka import TopicPartition as CKTP

    bootstrap = _dead_address()
    conf = {"bootstrap.servers": bootstrap, "group.id": unique_topic("g"),
            "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 500}
    calls = {"poll": lambda c: c.poll(0.2), "consume": lambda c: c.consume(10, 0.2),
             "consume_batch": lambda c: c.consume_batch(10, 0.2)}

    def ours(cb):
        c = Consumer({**conf, "error_cb": cb})
        c.assign([TopicPartition("t", 0)])
        return c

    def theirs(cb):
        c = CK({**conf, "error_cb": cb, "log_level": 0})
        c.assign([CKTP("t", 0)])
        return c

    got = _errors_for(ours, calls[how], 3.0)
    ref = _errors_for(theirs, lambda c: c.poll(0.2), 3.0)
    assert ref, "confluent-kafka reported nothing (the reference is broken)"
    assert got, "no error reached error_cb"
    codes = {e.code() for e in got}
    assert codes & {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}
    assert KafkaError._ALL_BROKERS_DOWN in {e.code() for e in ref}
    assert KafkaError._ALL_BROKERS_DOWN in codes


def test_brokers_going_down_reach_error_cb(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("down")
    create_topic(cluster, topic, 1)
    errors: list = []
    c = Consumer(cluster.client_config({"group.id": unique_topic("g"),
                                        "error_cb": errors.append,
                                        "reconnect.backoff.max.ms": 500}))
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        c.poll(1.0)
        cluster.broker_down(-1)
        deadline = time.monotonic() + 10
        while KafkaError._ALL_BROKERS_DOWN not in {e.code() for e in errors} \
                and time.monotonic() < deadline:
            c.poll(0.2)
    finally:
        cluster.broker_up(-1)
        c.close()
    assert KafkaError._ALL_BROKERS_DOWN in {e.code() for e in errors}


def test_rejected_login_reaches_error_cb(tansu_sasl):
    errors: list = []
    conf = tansu_sasl.client_config({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "nobody", "sasl.password": "wrong", "group.id": unique_topic("g"),
        "error_cb": errors.append})
    with Consumer(conf) as c:
        c.assign([TopicPartition("t", 0, 0)])
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            assert c.poll(0.2) is None
    assert errors, "a rejected login reached nobody"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "server rejected authentication: unknown-user" in errors[0].str()


def test_invalid_subscription_regex_raises_invalid_arg():
    with Consumer({"bootstrap.servers": _dead_address(), "group.id": "g"}) as c:
        with pytest.raises(KafkaException) as info:
            c.subscribe(["ok", "^["])
        assert info.value.args[0].code() == KafkaError._INVALID_ARG
        assert "'^['" in info.value.args[0].str()
        assert c.assignment() == []


def test_wrongly_typed_poll_arguments_name_the_parameter():
    with Consumer({"bootstrap.servers": _dead_address(), "group.id": "g"}) as c:
        with pytest.raises(TypeError, match="timeout must be a number of seconds or None, "
                                            "not str"):
            c.poll("x")
        with pytest.raises(TypeError, match="timeout must be a number"):
            c.consume(1, "x")
        with pytest.raises(TypeError, match="max_records must be an int, not str"):
            c.consume_batch(max_records="x")
        with pytest.raises(TypeError, match="timeout must be a number"):
            c.consume_batch(10, timeout="x")


def _threads() -> int:
    return threading.active_count()


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_dropped_consumers_release_threads_and_sockets(broker):
    topic = unique_topic("drop")
    create_topic(broker, topic, 1)
    gc.collect()
    threads, fds = _threads(), _fds()
    for _ in range(10):
        c = Consumer(broker.client_config({"group.id": unique_topic("g")}))
        c.assign([TopicPartition(topic, 0, 0)])
        c.poll(0.3)
        del c
    gc.collect()
    deadline = time.monotonic() + 10
    while (_threads() > threads or _fds() > fds) and time.monotonic() < deadline:
        time.sleep(0.05)
        gc.collect()
    assert _threads() <= threads, [t.name for t in threading.enumerate()]
    assert _fds() <= fds
