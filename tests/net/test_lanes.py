"""Lanes: a client's connections to one broker, so that a Fetch the broker holds delays no
request on another lane (a broker answers one connection's requests in order)."""

from __future__ import annotations

import time

import pytest
from harness import create_topic, unique_topic

from kafka_fast.consumer.fetch_session import FetchSession, fetch_request
from kafka_fast.consumer.fetcher import TOPIC_ID_VERSION
from kafka_fast.net.lanes import Lane
from kafka_fast.protocol import messages as m
from kafka_fast.protocol.versioned import versioned

from .helpers import make_client, tcp_connections, wait_until

pytestmark = pytest.mark.timeout(60)

HOLD_MS = 4000


def _held_fetch(topic: str):
    """A Fetch at offset 0 of an empty partition: the broker holds it for HOLD_MS."""
    plan = FetchSession(enabled=False).plan({(topic, 0): (0, -1, 1 << 20)})
    return versioned(m.FetchRequest, lambda: fetch_request(
        plan, max_wait_ms=HOLD_MS, min_bytes=1, max_bytes=1 << 20, isolation_level=0),
        TOPIC_ID_VERSION - 1)  # topics by name


def _metadata(topic: str) -> m.MetadataRequest:
    return m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(name=topic)],
                             allow_auto_topic_creation=False)


def test_other_lanes_answer_while_a_fetch_is_held_each_on_its_own_connection(kafka):
    topic = unique_topic("lanes")
    create_topic(kafka, topic, 1)
    # Other clients of this process (the topic's admin) may still hold connections.
    before = tcp_connections({kafka.port})[kafka.port]
    with make_client(kafka, role="consumer") as client:
        node = client.wait_metadata([topic], timeout=10).leader(topic, 0)
        fetch = client.send(node, _held_fetch(topic), lane=Lane.FETCH,
                            timeout_ms=HOLD_MS + 10_000)
        assert wait_until(lambda: client.in_flight(node, Lane.FETCH) == 1, 5)
        start = time.monotonic()
        answers = [client.send(node, _metadata(topic), lane=lane).result(HOLD_MS / 1000)
                   for lane in (Lane.DEFAULT, Lane.COORDINATOR)]
        elapsed = time.monotonic() - start
        assert not fetch.done(), "the broker answered the Fetch early: nothing was shown"
        # Behind the Fetch they would have waited for it (HOLD_MS); generous slack for load.
        assert elapsed < HOLD_MS / 1000 / 2, elapsed
        for resp in answers:
            assert [(t.name, t.error_code, [p.partition_index for p in t.partitions])
                    for t in resp.topics] == [(topic, 0, [0])]
        resp = fetch.result(HOLD_MS / 1000 + 10)
        parts = [p for t in resp.responses for p in t.partitions]
        assert [(p.partition_index, p.error_code, p.high_watermark) for p in parts] == [
            (0, 0, 0)]
        assert {lane.name: client.connection_state(node, lane) for lane in Lane} == {
            "DEFAULT": "READY", "COORDINATOR": "READY", "FETCH": "READY",
            # a producer's extra Produce connections, not opened here
            "PRODUCE_2": "DISCONNECTED", "PRODUCE_3": "DISCONNECTED",
            "PRODUCE_4": "DISCONNECTED"}
        assert len(tcp_connections({kafka.port})[kafka.port] - before) == 3
