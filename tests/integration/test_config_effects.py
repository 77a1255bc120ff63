"""Configuration keys whose effect is only seen on the wire, on Apache Kafka: the address
family broker names resolve to, and turning certificate verification off."""

from __future__ import annotations

import socket

import pytest
from harness import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import KafkaException, Producer


def _produce_one(conf: dict, topic: str) -> None:
    errors: list = []
    with Producer({**conf, "message.timeout.ms": 20000}) as p:
        p.produce(topic, key=b"k", value=b"v", partition=0,
                  on_delivery=lambda err, _m: err and errors.append(err))
        assert p.flush(30) == 0 and not errors, errors


def test_broker_address_family_picks_what_names_resolve_to(apache_kafka):
    port = apache_kafka.bootstrap.rsplit(":", 1)[1]
    try:
        socket.getaddrinfo("localhost", port, socket.AF_INET6)
        pytest.skip("localhost resolves to an IPv6 address here: the v6 case needs it not to")
    except socket.gaierror:
        pass
    topic = unique_topic("family")
    create_topic(apache_kafka, topic, 1)
    base = apache_kafka.client_config({"bootstrap.servers": f"localhost:{port}"})
    _produce_one({**base, "broker.address.family": "v4"}, topic)
    got = read_confluent(apache_kafka, topic, 1, 1)
    assert [(g.partition, g.offset, g.key, g.value) for g in got] == [(0, 0, b"k", b"v")]
    # the broker's name and its advertised 127.0.0.1 have no IPv6 address: nothing to reach
    with Producer({**base, "broker.address.family": "v6",
                   "socket.connection.setup.timeout.ms": 2000}) as p:
        with pytest.raises(KafkaException):
            p.list_topics(timeout=3)


def test_certificate_verification_off_accepts_a_broker_another_ca_signed(apache_kafka):
    wrong = apache_kafka.over_ssl(apache_kafka.wrong_ca_path)
    topic = unique_topic("noverify")
    create_topic(apache_kafka, topic, 1)
    _produce_one(wrong.client_config({"enable.ssl.certificate.verification": False}), topic)
    got = read_confluent(apache_kafka, topic, 1, 1)
    assert [(g.partition, g.offset, g.key, g.value) for g in got] == [(0, 0, b"k", b"v")]
    with Producer(wrong.client_config({"enable.ssl.certificate.verification": True})) as p:
        with pytest.raises(KafkaException):
            p.list_topics(timeout=5)
