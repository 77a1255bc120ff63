"""Helpers for network tests: clients on harness brokers, socket counting, connect logs."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from harness.proc_usage import tcp_connections

from kafka_fast.config import make_config
from kafka_fast.net.client import KafkaClient

__all__ = ["EventLog", "count", "event_logger", "make_client", "tcp_connections", "wait_until"]


def make_client(broker, role: str = "admin", **extra) -> KafkaClient:
    """A started KafkaClient for a harness broker; ``extra`` keys use '_' for '.'."""
    conf = broker.client_config({k.replace("_", "."): v for k, v in extra.items()})
    return KafkaClient(make_config(conf, role)).start()


class EventLog(logging.Handler):
    """Collects the client's structured connection records (``kafka_event`` extras)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if hasattr(record, "kafka_event"):
            with self._guard:
                self.records.append(record)

    def events(self, kind: str, node_id: int | None = None, port: int | None = None):
        with self._guard:
            return [r for r in self.records if r.kafka_event == kind
                    and (node_id is None or r.node_id == node_id)
                    and (port is None or getattr(r, "port", None) == port)]


def event_logger(name: str) -> tuple[logging.Logger, EventLog]:
    logger = logging.getLogger(f"kafka_fast.test.{name}.{id(object())}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = EventLog()
    logger.addHandler(handler)
    return logger, handler


def wait_until(predicate, timeout: float, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


def count(values) -> Counter:
    return Counter(values)
