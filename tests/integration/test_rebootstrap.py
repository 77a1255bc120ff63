"""metadata.recovery.strategy (KIP-899, KIP-1102) on Apache Kafka, beside confluent-kafka.

One Kafka node is moved to a new port while clients run: its storage, node id and topics stay,
its PLAINTEXT listener (the address clients learned from metadata) changes. The clients'
``bootstrap.servers`` is a Toxiproxy proxy, a stable address that is pointed at the moved
broker, as a load balancer or DNS name in front of a cluster would be. With ``rebootstrap``
the clients go back to it and carry on; with ``none`` they keep dialling the old address.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from types import ModuleType

import confluent_kafka
import pytest
from harness.apache_kafka import ApacheKafka, require_apache_kafka, start_apache_kafka
from harness.hostile_proxy import METADATA, HostileProxy
from harness.ports import free_port
from harness.toxiproxy import Proxy, Toxiproxy, require_toxiproxy

import kafka_fast

pytestmark = [pytest.mark.apache, pytest.mark.timeout(420)]

CLIENTS = {"kafka_fast": kafka_fast, "confluent": confluent_kafka}


class MovingBroker:
    """A one-node cluster reached through ``boot`` (Toxiproxy), movable to new ports."""

    def __init__(self, cluster: ApacheKafka, server: Toxiproxy, boot: Proxy) -> None:
        self.cluster = cluster
        self.server = server
        self.boot = boot
        self.bootstrap = f"127.0.0.1:{boot.port}"

    @property
    def port(self) -> int:
        return self.cluster.nodes[1].port

    def topic(self) -> str:
        name = f"reboot-{uuid.uuid4().hex[:8]}"
        self.cluster.create_topic(name, 1, 1)
        return name

    def move(self) -> int:
        """Stop the node, start it again with its PLAINTEXT listener on a new port and point
        the bootstrap proxy there; returns the old port."""
        node = self.cluster.nodes[1]
        old, new = node.port, free_port()
        node.signal()
        text = node.config_path.read_text()
        node.config_path.write_text(text.replace(f"PLAINTEXT://127.0.0.1:{old}",
                                                 f"PLAINTEXT://127.0.0.1:{new}"))
        node.ports["PLAINTEXT"] = new
        self.cluster.bootstrap = f"127.0.0.1:{new}"
        node.start()
        node.wait_ready()
        self._wait_advertised(new)
        self.boot.set_upstream(new)
        return old

    def _wait_advertised(self, port: int, timeout: float = 60.0) -> None:
        """Wait until Metadata names the node at ``port``: a restarted node answers with its
        previous registration (the old address) until its new one is replayed."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        deadline = time.monotonic() + timeout
        while True:
            try:
                brokers = admin.list_topics(timeout=5).brokers
                if [b.port for b in brokers.values()] == [port]:
                    return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"node not advertised at {port} after {timeout:.0f}s")
            time.sleep(0.3)


@pytest.fixture(scope="module")
def moving(tmp_path_factory) -> Iterator[MovingBroker]:
    require_apache_kafka()
    require_toxiproxy()
    workdir = tmp_path_factory.mktemp("rebootstrap")
    server = Toxiproxy(workdir / "toxiproxy")
    try:
        cluster = start_apache_kafka(workdir / "kafka")
    except BaseException:
        server.stop()
        raise
    try:
        boot = server.proxy("boot", cluster.nodes[1].port)
        yield MovingBroker(cluster, server, boot)
    finally:
        cluster.discard()
        server.stop()


def _settings(moving: MovingBroker, strategy: str, extra: dict | None = None) -> dict:
    conf = {"bootstrap.servers": moving.bootstrap, "metadata.recovery.strategy": strategy,
            "reconnect.backoff.max.ms": 1000, "retry.backoff.max.ms": 1000}
    conf.update(extra or {})
    return conf


def _produce(producer, topic: str, values: list[bytes], timeout: float) -> list[int]:
    """Produce ``values`` to partition 0; the offsets delivered within ``timeout``."""
    offsets: list[int] = []
    errors: list = []

    def report(err, msg) -> None:
        if err is None:
            offsets.append(msg.offset())
        else:
            errors.append(err)

    for value in values:
        producer.produce(topic, value, partition=0, on_delivery=report)
    producer.flush(timeout)
    assert not errors, errors
    return offsets


def _consume(consumer, count: int, timeout: float) -> list[tuple[int, bytes]]:
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error() is not None:
            continue
        got.append((msg.offset(), msg.value()))
    return got


def _start(client: ModuleType, moving: MovingBroker, strategy: str, topic: str,
           extra: dict | None = None):
    """A producer and a consumer (partition 0 from offset 0) that read back 3 records."""
    conf = _settings(moving, strategy, extra)
    producer = client.Producer(conf)
    consumer = client.Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                                "enable.auto.commit": False})
    consumer.assign([client.TopicPartition(topic, 0, 0)])
    before = [b"before-%d" % i for i in range(3)]
    assert _produce(producer, topic, before, 60) == [0, 1, 2]
    assert _consume(consumer, 3, 60) == list(enumerate(before))
    return producer, consumer


@pytest.mark.parametrize("name", list(CLIENTS))
def test_rebootstrap_follows_a_moved_broker(moving, name):
    """Default strategy: after the move both clients rebootstrap through the stable address
    and go on producing and consuming, offsets continuing where they were."""
    client = CLIENTS[name]
    topic = moving.topic()
    producer, consumer = _start(client, moving, "rebootstrap", topic)
    try:
        moving.move()
        after = [b"after-%d" % i for i in range(3)]
        assert _produce(producer, topic, after, 90) == [3, 4, 5]
        assert _consume(consumer, 3, 90) == [(3 + i, v) for i, v in enumerate(after)]
    finally:
        consumer.close()
        producer.flush(0)


@pytest.mark.parametrize("name", list(CLIENTS))
def test_none_keeps_dialling_the_learned_address(moving, name):
    """metadata.recovery.strategy=none: neither client goes back to bootstrap.servers, so
    a record produced after the move is not delivered and the consumer gets nothing."""
    client = CLIENTS[name]
    topic = moving.topic()
    producer, consumer = _start(client, moving, "none", topic)
    try:
        moving.move()
        assert _produce(producer, topic, [b"lost"], 12) == []
        assert len(producer) == 1
        assert _consume(consumer, 1, 3) == []
    finally:
        consumer.close()
        if hasattr(producer, "purge"):
            producer.purge()
        producer.flush(0)
    # The record was never written: the topic holds the three records from before.
    with_reader = client.Consumer({"bootstrap.servers": moving.cluster.bootstrap,
                                   "group.id": f"r-{uuid.uuid4().hex[:6]}",
                                   "enable.auto.commit": False})
    try:
        with_reader.assign([client.TopicPartition(topic, 0, 0)])
        assert [v for _, v in _consume(with_reader, 4, 8)] == [
            b"before-0", b"before-1", b"before-2"]
    finally:
        with_reader.close()


def test_rebootstrap_after_trigger_ms_without_metadata(moving):
    """KIP-1102: the learned address still accepts connections but never answers (a
    Toxiproxy proxy with a timeout toxic listens where the broker was). Connection set-up
    would take socket.connection.setup.timeout.ms (90 s) to fail; after
    metadata.recovery.rebootstrap.trigger.ms (2 s) without metadata the producer goes back
    to bootstrap.servers and delivers."""
    topic = moving.topic()
    records: list[logging.LogRecord] = []
    logger = logging.getLogger(f"rebootstrap-test-{uuid.uuid4().hex[:6]}")
    logger.setLevel(logging.INFO)
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    conf = _settings(moving, "rebootstrap", {
        "metadata.recovery.rebootstrap.trigger.ms": 2000,
        "socket.connection.setup.timeout.ms": 90000, "request.timeout.ms": 3000,
        "logger": logger})
    producer = kafka_fast.Producer(conf)
    stale: Proxy | None = None
    try:
        assert _produce(producer, topic, [b"one"], 60) == [0]
        old = moving.move()
        stale = moving.server.proxy(f"stale-{uuid.uuid4().hex[:6]}", moving.port, old)
        stale.add("timeout", "downstream", timeout=0)
        assert _produce(producer, topic, [b"two"], 60) == [1]
        events = [r for r in records if getattr(r, "kafka_event", None) == "rebootstrap"]
        assert events and "no metadata for 2000 ms" in events[0].getMessage()
    finally:
        producer.flush(0)
        if stale is not None:
            moving.server.call("DELETE", f"/proxies/{stale.name}")


def test_rebootstrap_required_in_metadata(kafka):
    """A Metadata v13 answer with the top-level error REBOOTSTRAP_REQUIRED (put there by a
    proxy in front of the real broker) makes the client rebootstrap and ask again: the
    refresh resolves with the topic, not with the empty answer."""
    if kafka.kind != "kafka":
        pytest.skip("needs Apache Kafka 4.3+ (Metadata v13)")
    host, port = kafka.bootstrap.split(",")[0].rsplit(":", 1)
    topic = f"reboot-req-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 2, 1)
    records: list[logging.LogRecord] = []
    logger = logging.getLogger(f"rebootstrap-req-{uuid.uuid4().hex[:6]}")
    logger.setLevel(logging.INFO)
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger.addHandler(handler)
    with HostileProxy([(host, int(port))]) as proxy:
        producer = kafka_fast.Producer({"bootstrap.servers": proxy.bootstrap,
                                        "logger": logger})
        try:
            assert producer.list_topics(topic, timeout=30).topics[topic].partitions
            proxy.inject(METADATA, "rebootstrap")
            md = producer.list_topics(topic, timeout=30)
            assert proxy.applied[(METADATA, "rebootstrap")] == 1
            assert sorted(md.topics[topic].partitions) == [0, 1]
            assert md.brokers
            events = [r for r in records if getattr(r, "kafka_event", None) == "rebootstrap"]
            assert len(events) == 1 and "REBOOTSTRAP_REQUIRED" in events[0].getMessage()
            offsets = _produce(producer, topic, [b"x"], 30)
            assert offsets == [0]
        finally:
            producer.flush(0)
