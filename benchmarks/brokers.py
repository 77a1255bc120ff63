"""The broker a benchmark script runs on: ``--bootstrap``'s, or one it starts (an embedded
Tansu, librdkafka's mock cluster, or Apache Kafka as the test harness runs it)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benchmarks.command import Broker, given_or_embedded  # noqa: E402
from kafka_fast.bench.runner import admin_create_topic  # noqa: E402

KINDS = ("tansu", "kafka", "kafka3", "mock")


def _harness() -> None:
    # Appended so that nothing under tests/ shadows an installed package.
    tests = os.path.join(ROOT, "tests")
    if tests not in sys.path:
        sys.path.append(tests)


@contextmanager
def mock_cluster() -> Iterator[Broker]:
    """librdkafka's 3-broker mock cluster, started by the test harness."""
    _harness()
    from harness.mock_cluster import start_mock_cluster

    cluster = start_mock_cluster()

    def create_topic(name: str, partitions: int) -> None:
        cluster.create_topic(name, partitions, 1)
        time.sleep(0.2)  # let the new topic reach every mock broker's metadata

    try:
        yield Broker(cluster.bootstrap, cluster.pid, create_topic, "librdkafka mock cluster")
    finally:
        cluster.stop()


@contextmanager
def apache_kafka(nodes: int = 1, settings: dict[str, str] | None = None) -> Iterator[Broker]:
    """Apache Kafka (KRaft, PLAINTEXT) started as the test harness starts it
    (tests/harness/apache_kafka.py: 512 MB heap per node, serial GC, jars from
    tools/fetch_kafka.sh), with server ``settings`` on top. With 3 nodes topics are
    replicated 3 times (min.insync.replicas=2) and the broker CPU column counts node 1 only."""
    _harness()
    from harness.apache_kafka import kafka_version, start_apache_kafka

    with tempfile.TemporaryDirectory(prefix="kafka-fast-bench-") as workdir:
        cluster = start_apache_kafka(Path(workdir), brokers=nodes, settings=settings)
        create = admin_create_topic(cluster.bootstrap, replication=nodes) if nodes > 1 \
            else None
        label = f"Apache Kafka {kafka_version()} ({nodes} node{'s' if nodes > 1 else ''})"
        try:
            yield Broker(cluster.bootstrap, cluster.pid, create, label)
        finally:
            cluster.stop()


@contextmanager
def broker_for(bootstrap: str | None, kind: str) -> Iterator[Broker]:
    """``bootstrap`` if given, else a broker of ``kind`` started for the run."""
    if bootstrap or kind == "tansu":
        with given_or_embedded(bootstrap) as broker:
            yield broker
    elif kind == "mock":
        with mock_cluster() as broker:
            yield broker
    else:
        with apache_kafka(3 if kind == "kafka3" else 1) as broker:
            yield broker
