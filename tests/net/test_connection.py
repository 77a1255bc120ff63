"""BrokerConnection on its own: an I/O loop, a buffer pool and a listener recording what the
connection reports (``kafka_fast.net.events.ConnectionEvents``), no KafkaClient."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from concurrent.futures import Future

import pytest
from harness import create_topic, unique_topic
from harness.ports import LOOPBACK, free_port

from kafka_fast.cluster.bootstrap import parse_address
from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.net.connection import BrokerConnection, State
from kafka_fast.net.framing import BufferPool
from kafka_fast.net.loop import IOLoop
from kafka_fast.net.request import Request
from kafka_fast.net.settings import ConnectionSettings
from kafka_fast.protocol.headers import response_header_version
from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

pytestmark = pytest.mark.timeout(60)
log = logging.getLogger("kafka_fast.test.connection")


class Recorder:
    """A ConnectionEvents listener that records every call; ``reroute`` answers ``take``."""

    def __init__(self, take: bool = False) -> None:
        self.take = take
        self.calls: list[tuple] = []
        self.rerouted: list[Request] = []
        self.changed = threading.Condition()

    def _record(self, *call: object) -> None:
        with self.changed:
            self.calls.append(call)
            self.changed.notify_all()

    def connection_ready(self, conn: BrokerConnection) -> None:
        self._record("ready", conn.node_id, conn.state)

    def connection_down(self, conn: BrokerConnection, error: KafkaError | None,
                        was_ready: bool, terminal: bool) -> None:
        self._record("down", conn.node_id, error.code() if error else None, was_ready,
                     terminal)

    def throttled(self, conn: BrokerConnection, throttle_ms: int) -> None:
        self._record("throttled", conn.node_id, throttle_ms)

    def reroute(self, req: Request, failed: BrokerConnection) -> bool:
        self.rerouted.append(req)
        self._record("reroute", req.api_key, failed.node_id)
        return self.take

    def wait_for(self, kind: str, timeout: float = 15.0) -> tuple:
        with self.changed:
            assert self.changed.wait_for(
                lambda: any(c[0] == kind for c in self.calls), timeout), self.calls
            return next(c for c in self.calls if c[0] == kind)


@pytest.fixture
def loop():
    loop = IOLoop(name="kafka_fast-test-connection", logger=log)
    loop.start()
    yield loop
    loop.stop(5)


def on_loop(loop: IOLoop, fn):
    """Run ``fn()`` on the I/O thread; its result."""
    fut: Future = Future()

    def run() -> None:
        try:
            fut.set_result(fn())
        except BaseException as exc:
            fut.set_exception(exc)

    loop.call_soon(run)
    return fut.result(10)


def connection(loop: IOLoop, listener: Recorder, address: str, node_id: int = -1,
               **conf) -> BrokerConnection:
    host, port = parse_address(address)
    settings = ConnectionSettings.from_config(
        make_config({"bootstrap.servers": address, **conf}, "admin"))
    return BrokerConnection(node_id, host, port, settings, listener, loop, BufferPool(), log)


def request(message, node_id: int = -1, any_node: bool = False,
            timeout: float = 10.0) -> tuple[Request, Future]:
    fut: Future = Future()
    return Request(message, None, fut, time.monotonic() + timeout, node_id, any_node), fut


def test_metadata_from_a_real_broker(loop, real_broker):
    topic = unique_topic("conn")
    create_topic(real_broker, topic, partitions=2)
    listener = Recorder()
    conn = connection(loop, listener, real_broker.bootstrap)
    req, fut = request(MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
        allow_auto_topic_creation=False))
    on_loop(loop, lambda: conn.enqueue(req))
    resp = fut.result(15)
    assert listener.calls[0] == ("ready", -1, State.READY)
    assert conn.state == State.READY and conn.ready
    assert fut.api_version == conn.versions[MetadataRequest.API_KEY] >= 1
    assert conn.versions[ApiVersionsRequest.API_KEY] >= 3
    assert [b.port for b in resp.brokers] == [real_broker.port]
    (info,) = resp.topics
    assert (info.name, info.error_code) == (topic, 0)
    assert sorted(p.partition_index for p in info.partitions) == [0, 1]
    assert {p.leader_id for p in info.partitions} == {resp.brokers[0].node_id}
    assert conn.load() == 0 and not conn.inflight
    # The broker's connection goes away: the listener hears it, nothing was outstanding.
    on_loop(loop, lambda: conn.close(KafkaError.of(KafkaError._TRANSPORT, "test closes")))
    assert listener.calls[1:] == [("down", -1, KafkaError._TRANSPORT, True, False)]
    assert conn.state == State.DISCONNECTED and conn.last_failed


@pytest.mark.parametrize("take", [False, True])
def test_refused_connection_offers_requests_for_any_broker(loop, take):
    listener = Recorder(take=take)
    port = free_port()  # nothing listens there
    conn = connection(loop, listener, f"{LOOPBACK}:{port}", node_id=4)
    anywhere, fut_any = request(MetadataRequest(topics=[]), node_id=4, any_node=True)
    pinned, fut_pinned = request(MetadataRequest(topics=[]), node_id=4)
    on_loop(loop, lambda: (conn.enqueue(anywhere), conn.enqueue(pinned)))
    down = listener.wait_for("down")
    assert down == ("down", 4, KafkaError._TRANSPORT, False, False)
    assert ("reroute", MetadataRequest.API_KEY, 4) in listener.calls
    assert listener.rerouted == [anywhere]
    assert not any(c[0] == "ready" for c in listener.calls)
    err = fut_pinned.exception(5)
    assert isinstance(err, KafkaException) and err.args[0].code() == KafkaError._TRANSPORT
    assert f"{LOOPBACK}:{port}/4" in err.args[0].str()
    if take:  # the listener took it: the connection leaves its Future alone
        assert not fut_any.done()
    else:
        assert fut_any.exception(5).args[0].code() == KafkaError._TRANSPORT
    assert conn.state == State.DISCONNECTED and conn.last_failed and conn.attempts == 1


class ScriptedBroker:
    """Answers ApiVersions and Metadata (with ``throttle_ms``) on one connection; records
    when each Metadata request arrived."""

    def __init__(self, throttle_ms: int) -> None:
        self.throttle_ms = throttle_ms
        self.lsock = socket.create_server((LOOPBACK, 0))
        self.port = self.lsock.getsockname()[1]
        self.metadata_at: list[float] = []
        self.answered_at: list[float] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _recv(self, sock: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _serve(self) -> None:
        sock, _ = self.lsock.accept()
        with sock:
            try:
                while True:
                    size = struct.unpack(">i", self._recv(sock, 4))[0]
                    frame = self._recv(sock, size)
                    api_key, version, corr = struct.unpack_from(">hhi", frame)
                    sock.sendall(self._answer(api_key, version, corr))
            except (EOFError, OSError):
                return

    def _answer(self, api_key: int, version: int, corr: int) -> bytes:
        if api_key == ApiVersionsRequest.API_KEY:
            body = ApiVersionsResponse(error_code=0, api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4),
                ApiVersionsResponse.ApiVersion(api_key=3, min_version=0, max_version=12),
            ]).encode(version)
            header = struct.pack(">i", corr)  # ApiVersions answers with header v0
        else:
            assert api_key == MetadataRequest.API_KEY
            self.metadata_at.append(time.monotonic())
            body = MetadataResponse(throttle_time_ms=self.throttle_ms, brokers=[
                MetadataResponse.MetadataResponseBroker(node_id=9, host=LOOPBACK,
                                                        port=self.port)]).encode(version)
            header = struct.pack(">i", corr)
            if response_header_version(api_key, version) >= 1:
                header += b"\x00"  # no tagged fields
            self.answered_at.append(time.monotonic())
        return struct.pack(">i", len(header) + len(body)) + header + body

    def close(self) -> None:
        self.lsock.close()


def test_throttle_is_reported_and_holds_the_next_request(loop):
    broker = ScriptedBroker(throttle_ms=300)
    listener = Recorder()
    conn = connection(loop, listener, f"{LOOPBACK}:{broker.port}", node_id=9)
    try:
        first, fut1 = request(MetadataRequest(topics=[]), node_id=9)
        on_loop(loop, lambda: conn.enqueue(first))
        resp = fut1.result(10)
        assert (resp.throttle_time_ms, [b.node_id for b in resp.brokers]) == (300, [9])
        assert fut1.api_version == 12
        assert listener.wait_for("throttled") == ("throttled", 9, 300)
        second, fut2 = request(MetadataRequest(topics=[]), node_id=9)
        on_loop(loop, lambda: conn.enqueue(second))
        fut2.result(10)
        # The second request waited out the throttle time before it was written.
        assert broker.metadata_at[1] - broker.answered_at[0] >= 0.25
        assert [c[0] for c in listener.calls] == ["ready", "throttled", "throttled"]
    finally:
        on_loop(loop, lambda: conn.close(None))
        broker.close()
    assert listener.calls[-1] == ("down", 9, None, True, False)
