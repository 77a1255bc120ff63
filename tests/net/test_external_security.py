"""Successful SASL/TLS logins need a cluster that keeps users: run against KAFKA_BOOTSTRAP
with KAFKA_SASL_* / KAFKA_SECURITY_PROTOCOL set (Tansu here rejects every login)."""

from __future__ import annotations

import pytest
from harness import external_from_env, unique_topic

from kafka_fast.admin import AdminClient, NewTopic
from kafka_fast.errors import KafkaError, KafkaException

from .helpers import make_client

EXTERNAL = external_from_env()
pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(EXTERNAL is None or EXTERNAL.security_protocol == "PLAINTEXT",
                       reason="needs KAFKA_BOOTSTRAP with SASL or TLS settings"),
]


def test_login_and_round_trip():
    with make_client(EXTERNAL) as client:
        view = client.wait_metadata(timeout=20)
        assert view.brokers
    topic = unique_topic("secure")
    with AdminClient(EXTERNAL.client_config()) as admin:
        assert admin.create_topics([NewTopic(topic, 1, -1)])[topic].result(30) is None
        assert topic in admin.list_topics(timeout=20).topics
        assert admin.delete_topics([topic])[topic].result(30) is None


def test_wrong_password_is_rejected():
    if EXTERNAL.sasl_mechanism is None:
        pytest.skip("no SASL mechanism configured")
    with make_client(EXTERNAL, sasl_password="definitely-wrong") as client:
        with pytest.raises(KafkaException) as info:
            client.wait_metadata(timeout=10)
        assert info.value.args[0].code() == KafkaError._AUTHENTICATION
