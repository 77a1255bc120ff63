"""client.software.name / client.software.version: checked as the broker checks them, and
sent in ApiVersions v3+ (seen on the wire by a relaying proxy, accepted by Apache Kafka)."""

from __future__ import annotations

import socket
import struct
import uuid

import pytest
from harness.hostile_proxy import HostileProxy

import kafka_fast
from kafka_fast.config import make_config
from kafka_fast.errors import ConfigError

API_VERSIONS = 18
INVALID_REQUEST = 42
NAMES = ["kafka-fast", "my.app-2", "A", "1.0.0", "-lead", "trail.", "with space", "under_score",
         "plus+1", "é"]


def _compact(text: str) -> bytes:
    data = text.encode()
    assert len(data) < 127
    return bytes([len(data) + 1]) + data


def _broker_verdict(host: str, port: int, name: str) -> int:
    """The error code Apache Kafka answers an ApiVersions v3 carrying ``name`` as both
    software name and version with (raw bytes, no client library involved)."""
    header = struct.pack(">hhih", API_VERSIONS, 3, 7, 4) + b"test" + b"\0"
    frame = header + _compact(name) + _compact(name) + b"\0"
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _read(sock, 4))[0]
        body = _read(sock, size)
    assert struct.unpack_from(">i", body, 0)[0] == 7
    return struct.unpack_from(">h", body, 4)[0]


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "connection closed"
        out += chunk
    return out


def _accepted(name: str) -> bool:
    """Whether kafka_fast takes ``name`` for both keys."""
    try:
        make_config({"bootstrap.servers": "127.0.0.1:1", "client.software.name": name,
                     "client.software.version": name}, "producer")
    except ConfigError as exc:
        assert "client.software" in str(exc) and "must match" in str(exc)
        return False
    return True


def test_names_are_refused_exactly_when_the_broker_refuses_them(kafka):
    if kafka.kind != "kafka":
        pytest.skip("needs Apache Kafka (it checks the software name and version)")
    host, port = kafka.bootstrap.split(",")[0].rsplit(":", 1)
    verdicts = {name: _broker_verdict(host, int(port), name) for name in NAMES}
    assert set(verdicts.values()) == {0, INVALID_REQUEST}
    assert {name: _accepted(name) for name in NAMES} == {
        name: code == 0 for name, code in verdicts.items()}


def test_configured_software_reaches_the_broker(kafka):
    host, port = kafka.bootstrap.split(",")[0].rsplit(":", 1)
    topic = f"software-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(topic, 1, 1)
    with HostileProxy([(host, int(port))]) as proxy:
        proxy.capture.add(API_VERSIONS)
        producer = kafka_fast.Producer({"bootstrap.servers": proxy.bootstrap,
                                        "client.software.name": "acme-ingest",
                                        "client.software.version": "7.1.2-rc1"})
        delivered = []
        producer.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(
            (err, msg.offset())))
        assert producer.flush(30) == 0
        assert delivered == [(None, 0)]
        frames = list(proxy.captured)
    assert frames
    for api_key, version, frame in frames:
        assert api_key == API_VERSIONS and version >= 3
        assert frame.endswith(_compact("acme-ingest") + _compact("7.1.2-rc1") + b"\0")


def test_default_software_is_kafka_fast_and_its_version():
    conf = make_config({"bootstrap.servers": "x:1"}, "producer")
    assert (conf["client.software.name"], conf["client.software.version"]) == (
        "kafka-fast", kafka_fast.__version__)
