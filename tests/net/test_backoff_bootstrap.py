"""Reconnect/retry backoff and bootstrap address parsing."""

from __future__ import annotations

import random

import pytest

from kafka_fast.cluster.bootstrap import bootstrap_addresses, parse_address
from kafka_fast.errors import ConfigError
from kafka_fast.shared.backoff import Backoff


def test_backoff_doubles_up_to_the_maximum_without_jitter():
    b = Backoff(100, 1000, jitter=0)
    assert [round(b.next_delay(), 6) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    b.reset()
    assert b.next_delay() == pytest.approx(0.1)


def test_backoff_jitter_stays_within_bounds_and_varies():
    rng = random.Random(7)
    b = Backoff(100, 10_000, jitter=0.2, rng=rng.random)
    delays = []
    for n in range(8):
        d = b.next_delay()
        base = min(10.0, 0.1 * 2 ** n)
        assert base * 0.8 <= d <= min(base * 1.2, 10.0)
        delays.append(d / base)
    assert len({round(x, 6) for x in delays}) > 4


def test_backoff_never_exceeds_the_maximum():
    b = Backoff(100, 300, jitter=0.2, rng=lambda: 0.999)
    assert max(b.next_delay() for _ in range(10)) <= 0.3


def test_zero_backoff():
    assert Backoff(0, 0).next_delay() == 0.0


@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1:9093", ("127.0.0.1", 9093)),
    ("broker", ("broker", 9092)),
    (" PLAINTEXT://kafka-1:19092 ", ("kafka-1", 19092)),
    ("[::1]:9094", ("::1", 9094)),
    ("[::1]", ("::1", 9092)),
    ("fe80::1", ("fe80::1", 9092)),
])
def test_parse_address(text, expected):
    assert parse_address(text) == expected


@pytest.mark.parametrize("text,reason", [
    ("host:port", "bad port"),
    ("host:0", "out of range"),
    ("host:70000", "out of range"),
    (":9092", "empty host"),
    ("[::1", "missing"),
    ("", "Invalid bootstrap"),
])
def test_parse_address_errors(text, reason):
    with pytest.raises(ConfigError, match=reason):
        parse_address(text)


def test_bootstrap_addresses_are_deduplicated_and_shuffled():
    servers = [f"h{i}:{9000 + i}" for i in range(20)] + ["h0:9000"]
    orders = {tuple(bootstrap_addresses(servers, random.Random(seed))) for seed in range(5)}
    assert all(sorted(o) == sorted((f"h{i}", 9000 + i) for i in range(20)) for o in orders)
    assert len(orders) > 1
    assert bootstrap_addresses([]) == []  # a client without brokers (tests/test_no_bootstrap.py)
