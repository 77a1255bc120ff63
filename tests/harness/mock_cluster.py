"""librdkafka's mock cluster in a helper process, with a control channel for fault injection.

The server (``mock_cluster_server.py``) owns the cluster; this side talks to it
with JSON lines over the process's stdin/stdout, each call bounded by a timeout.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from harness.brokers import ProcessBroker
from harness.process import ManagedProcess

SERVER = Path(__file__).with_name("mock_cluster_server.py")
CONTROL_TIMEOUT = 10.0
START_TIMEOUT = 15.0


class MockRequest(NamedTuple):
    """A request the mock cluster received (request tracking)."""

    broker_id: int
    api_key: int
    timestamp_us: int


class MockClusterError(RuntimeError):
    """A control command failed (the message names the librdkafka error)."""


class MockCluster(ProcessBroker):
    """A running mock cluster.

    ``.bootstrap`` (comma-separated), ``.brokers`` ``{id: (host, port)}``, ``.pid``
    (server process), ``.version`` (librdkafka), and one method per control command.
    """

    kind = "mock"

    def __init__(self, proc: ManagedProcess, control_timeout: float = CONTROL_TIMEOUT) -> None:
        self._proc = proc
        self._lock = threading.Lock()
        self._buffer = b""
        self._next_id = 0
        self._timeout = control_timeout
        self._selector = selectors.DefaultSelector()
        self._selector.register(proc.popen.stdout, selectors.EVENT_READ)
        hello = json.loads(self._readline(time.monotonic() + START_TIMEOUT))
        super().__init__(hello["bootstrap"], [proc])
        self.version: str = hello["version"]
        self.library: str = hello["library"]
        self.missing_functions: list[str] = hello["missing"]
        self.brokers: dict[int, tuple[str, int]] = self._discover_brokers()

    # -- control channel ----------------------------------------------------------

    def _readline(self, deadline: float) -> str:
        fd = self._proc.popen.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"mock cluster control channel silent\n{self.log_tail()}")
            if not self._selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise MockClusterError(f"mock cluster server exited\n{self.log_tail()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def call(self, op: str, **args):
        """Send one command and return its result; raises MockClusterError or TimeoutError."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            payload = json.dumps({"id": ident, "op": op, "args": args}) + "\n"
            try:
                self._proc.popen.stdin.write(payload.encode())
                self._proc.popen.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:
                raise MockClusterError(
                    f"mock cluster server gone: {exc}\n{self.log_tail()}"
                ) from exc
            reply = json.loads(self._readline(time.monotonic() + self._timeout))
        if reply.get("id") != ident:
            raise MockClusterError(f"reply {reply!r} does not answer request {ident}")
        if not reply["ok"]:
            raise MockClusterError(f"{op}{args}: {reply['error']}")
        return reply["result"]

    def _discover_brokers(self) -> dict[int, tuple[str, int]]:
        from confluent_kafka.admin import AdminClient

        md = AdminClient(self.client_config()).list_topics(timeout=10)
        return {b.id: (b.host, b.port) for b in sorted(md.brokers.values(), key=lambda b: b.id)}

    def stop(self) -> None:
        self._selector.close()
        stdin = self._proc.popen.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()  # EOF: the server destroys the cluster and exits
                self._proc.popen.wait(5)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                pass
        self._proc.stop()

    # -- topics and partitions ----------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int = 1) -> None:
        """Create a topic (the mock has no CreateTopics API)."""
        self.call("create_topic", topic=name, partitions=partitions,
                  replication_factor=replication_factor)

    def set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move the partition leader (-1: no leader)."""
        self.call("set_leader", topic=topic, partition=partition, broker_id=broker_id)

    def set_follower(self, topic: str, partition: int, broker_id: int) -> None:
        """Set the partition's preferred read replica."""
        self.call("set_follower", topic=topic, partition=partition, broker_id=broker_id)

    def set_follower_wmarks(self, topic: str, partition: int, lo: int, hi: int) -> None:
        """Set the follower's low/high watermarks (-1: the leader's)."""
        self.call("set_follower_wmarks", topic=topic, partition=partition, lo=lo, hi=hi)

    def push_leader_response(
        self, topic: str, partition: int, leader_id: int, leader_epoch: int
    ) -> None:
        """Queue a Metadata leader answer for the partition."""
        self.call("push_leader_response", topic=topic, partition=partition,
                  leader_id=leader_id, leader_epoch=leader_epoch)

    def topic_set_error(self, topic: str, code: int) -> None:
        """Make Metadata (and AddPartitionsToTxn) report ``code`` for ``topic`` (0 clears)."""
        self.call("topic_set_error", topic=topic, code=code)

    # -- brokers ------------------------------------------------------------------

    def broker_down(self, broker_id: int) -> None:
        """Disconnect the broker and refuse new connections (-1: all). Leaders stay."""
        self.call("broker_down", broker_id=broker_id)

    def broker_up(self, broker_id: int) -> None:
        """Accept connections again (-1: all)."""
        self.call("broker_up", broker_id=broker_id)

    def set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay every response of the broker by ``rtt_ms`` (-1: all brokers)."""
        self.call("set_rtt", broker_id=broker_id, rtt_ms=rtt_ms)

    def set_rack(self, broker_id: int, rack: str) -> None:
        self.call("set_rack", broker_id=broker_id, rack=rack)

    # -- errors and API versions --------------------------------------------------

    def push_errors(self, api_key: int, codes: list[int]) -> None:
        """The next ``len(codes)`` requests with ``api_key`` (any broker) fail with these codes."""
        self.call("push_errors", api_key=api_key, codes=list(codes))

    def clear_errors(self, api_key: int) -> None:
        self.call("clear_errors", api_key=api_key)

    def push_broker_errors_rtt(
        self, broker_id: int, api_key: int, errors: list[tuple[int, int]]
    ) -> None:
        """The broker answers its next requests with ``api_key`` with (code, delay ms) in turn."""
        self.call("push_broker_errors_rtt", broker_id=broker_id, api_key=api_key,
                  errors=[[int(c), int(r)] for c, r in errors])

    def broker_error_stack_cnt(self, broker_id: int, api_key: int) -> int:
        """How many pushed broker errors for ``api_key`` are not consumed yet."""
        return self.call("broker_error_stack_cnt", broker_id=broker_id, api_key=api_key)

    def set_coordinator(self, key_type: str, key: str, broker_id: int) -> None:
        """Make ``broker_id`` the coordinator for a "group" or "transaction" key."""
        self.call("set_coordinator", key_type=key_type, key=key, broker_id=broker_id)

    def set_apiversion(self, api_key: int, min_version: int, max_version: int) -> None:
        """Limit the versions advertised for ``api_key`` (-1, -1: not supported)."""
        self.call("set_apiversion", api_key=api_key, min_version=min_version,
                  max_version=max_version)

    # -- request tracking ---------------------------------------------------------

    def start_request_tracking(self) -> None:
        self.call("start_request_tracking")

    def stop_request_tracking(self) -> None:
        self.call("stop_request_tracking")

    def clear_requests(self) -> None:
        self.call("clear_requests")

    def requests(self) -> list[MockRequest]:
        """Requests received since tracking started (broker id, API key, time in µs)."""
        return [MockRequest(*r) for r in self.call("requests")]


def start_mock_cluster(workdir: Path | None = None, broker_count: int = 3) -> MockCluster:
    """Start a mock cluster with ``broker_count`` brokers (ids 1..N) on random loopback ports."""
    workdir = Path(workdir or tempfile.mkdtemp(prefix="mock-cluster-"))
    proc = ManagedProcess(
        [sys.executable, str(SERVER), str(broker_count)],
        workdir / "mock-cluster.log",
        stdin=subprocess.PIPE,
        stdout_pipe=True,
    )
    try:
        return MockCluster(proc)
    except BaseException:
        proc.stop()
        raise


@pytest.fixture(scope="module")
def mock_cluster(tmp_path_factory):
    """A 3-broker mock cluster shared by the tests of one module."""
    cluster = start_mock_cluster(tmp_path_factory.mktemp("mock-cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture
def fresh_mock_cluster(tmp_path_factory):
    """A 3-broker mock cluster for one test (for faults that must not leak)."""
    cluster = start_mock_cluster(tmp_path_factory.mktemp("mock-cluster"))
    yield cluster
    cluster.stop()
