"""A share consumer against a broker without the share-group APIs fails clearly."""

from __future__ import annotations

import time

import pytest

from kafka_fast import KafkaError, KafkaException, ShareConsumer


def test_a_broker_without_share_groups_is_a_fatal_error(tansu):
    with ShareConsumer({"bootstrap.servers": tansu.bootstrap,
                        "group.id": "share-on-tansu"}) as c:
        c.subscribe(["share-on-tansu"])
        deadline = time.monotonic() + 30
        with pytest.raises(KafkaException) as raised:
            while time.monotonic() < deadline:
                c.poll(0.5)
    err = raised.value.args[0]
    assert err.code() == KafkaError._UNSUPPORTED_FEATURE and err.fatal()
    assert "ShareGroupHeartbeat version 1 (share groups need Apache Kafka 4.1+)" in err.str()
