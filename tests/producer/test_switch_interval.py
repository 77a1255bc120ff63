"""python.switch.interval.ms: an opt-in lowering of the interpreter's switch interval while
producers are open; by default a producer leaves the interpreter alone."""

from __future__ import annotations

import sys

import pytest

from kafka_fast import Producer
from kafka_fast.errors import ConfigError


@pytest.fixture
def interval():
    """Run with the interpreter's default interval and put the original one back after."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


def producer(kafka, **extra) -> Producer:
    return Producer(kafka.client_config(extra))


def test_by_default_a_producer_leaves_the_interval_alone(kafka, interval):
    with producer(kafka) as p:
        p.produce("switch-interval-default", b"x")
        assert p.flush(10) == 0
        assert sys.getswitchinterval() == pytest.approx(0.005)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_open_producers_shorten_the_interval_and_the_last_close_restores_it(kafka, interval):
    a = producer(kafka, **{"python.switch.interval.ms": 0.5})
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    b = producer(kafka, **{"python.switch.interval.ms": 0.2})
    assert sys.getswitchinterval() == pytest.approx(0.0002)
    b.close()
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    b.close()  # a second close releases nothing more
    assert sys.getswitchinterval() == pytest.approx(0.0005)
    a.close()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_zero_leaves_the_interpreter_alone_and_longer_never_lengthens(kafka, interval):
    with producer(kafka, **{"python.switch.interval.ms": 0}):
        assert sys.getswitchinterval() == pytest.approx(0.005)
    with producer(kafka, **{"python.switch.interval.ms": 50}):
        assert sys.getswitchinterval() == pytest.approx(0.005)
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_negative_interval_is_a_config_error(kafka):
    with pytest.raises(ConfigError, match="python.switch.interval.ms"):
        producer(kafka, **{"python.switch.interval.ms": -1})
