"""An exception raised by code on the I/O thread reaches error_cb, not only the log."""

from __future__ import annotations

import time

from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError
from kafka_fast.net.client import KafkaClient
from kafka_fast.protocol.messages import MetadataRequest


def _served_errors(client: KafkaClient, errors: list, want: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while len(errors) < want and time.monotonic() < deadline:
        client.serve_events(0.1)


def test_failing_callbacks_reach_error_cb(broker):
    errors: list[KafkaError] = []
    conf = make_config(broker.client_config({"error_cb": errors.append}), "admin")
    with KafkaClient(conf).start() as client:
        fut = client.send_any(MetadataRequest(topics=[]))

        def broken(f):
            raise ValueError("response callback broke")

        fut.add_done_callback(broken)
        assert fut.result(10).brokers  # the response itself is fine
        client.call_soon(lambda: 1 / 0)
        _served_errors(client, errors, 2)
    reasons = sorted(e.str() for e in errors)
    assert [e.code() for e in errors] == [KafkaError._FAIL, KafkaError._FAIL]
    assert reasons == ["internal error on the I/O thread: ValueError: response callback broke",
                       "internal error on the I/O thread: ZeroDivisionError: division by zero"]


def test_code_failing_on_every_iteration_is_reported_once_a_second(broker):
    errors: list[KafkaError] = []
    conf = make_config(broker.client_config({"error_cb": errors.append}), "admin")
    calls = []

    def hook():
        calls.append(1)
        raise RuntimeError("hook broke")

    with KafkaClient(conf).start() as client:
        client.add_poll_hook(hook)
        client.call_later(0.01, client.wakeup)
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            client.wakeup()
            client.serve_events(0.05)
        client.remove_poll_hook(hook)
        client.serve_events(0.1)
    assert len(calls) > 10
    assert 1 <= len(errors) <= 3
    assert {e.str() for e in errors} == {"internal error on the I/O thread: RuntimeError: hook broke"}
