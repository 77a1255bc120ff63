"""Closing a client while I/O-thread code is about to send: the requests that code makes
fail with _DESTROY, and nothing is logged (no "client is closed" traceback)."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.protocol.messages import MetadataRequest

from .helpers import make_client

pytestmark = pytest.mark.timeout(60)


def test_requests_made_by_timers_due_while_closing_fail_quietly(broker, caplog):
    caplog.set_level(logging.DEBUG, logger="kafka_fast")
    client = make_client(broker)
    assert client.send_any(MetadataRequest(topics=[])).result(10).brokers
    entered, release = threading.Event(), threading.Event()
    sent = []

    def hold():
        # two timers due as soon as this callback returns: the periodic metadata refresh
        # (what its timer runs) and a request of any other I/O-thread code
        client.loop.call_later(0, lambda: client.metadata.submit(None, False))
        client.loop.call_later(0, lambda: sent.append(
            client.send_any(MetadataRequest(topics=[]))))
        entered.set()
        release.wait(10)

    client.call_soon(hold)
    assert entered.wait(10)
    closer = threading.Thread(target=client.close, args=(10,))
    closer.start()
    deadline = time.monotonic() + 10
    while not client.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.closed  # close() has begun; the I/O thread is still in hold()
    release.set()
    closer.join(15)
    assert not closer.is_alive()
    assert not client.loop.running
    assert len(sent) == 1
    exc = sent[0].exception(1)
    assert isinstance(exc, KafkaException)
    assert exc.args[0].code() == KafkaError._DESTROY
    noisy = [r for r in caplog.records if r.name.startswith("kafka_fast")
             and (r.levelno >= logging.WARNING or r.exc_info)]
    assert noisy == [], [r.getMessage() for r in noisy]


def test_requests_after_close_still_raise_on_application_threads(broker):
    client = make_client(broker)
    client.close()
    with pytest.raises(KafkaException, match="client is closed") as info:
        client.send_any(MetadataRequest(topics=[]))
    assert info.value.args[0].code() == KafkaError._DESTROY
