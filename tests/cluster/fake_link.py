"""A ``ClusterLink`` fake: a hand-run loop, recorded requests, Futures answered by the test
with responses that went through the generated codec (encode, then decode)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from kafka_fast.cluster.view import ClusterView


class FakeTimer:
    def __init__(self, delay: float, fn: Callable[[], object]) -> None:
        self.delay = delay
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """Callbacks run when the test calls ``run()``; timers when it calls ``fire()``."""

    def __init__(self) -> None:
        self.soon: deque[Callable[[], object]] = deque()
        self.timers: list[FakeTimer] = []

    def call_soon(self, fn: Callable[[], object]) -> None:
        self.soon.append(fn)

    def call_later(self, delay: float, fn: Callable[[], object]) -> FakeTimer:
        timer = FakeTimer(delay, fn)
        self.timers.append(timer)
        return timer

    def run(self) -> None:
        while self.soon:
            self.soon.popleft()()

    def live_timers(self) -> list[FakeTimer]:
        return [t for t in self.timers if not t.cancelled]

    def fire(self, timer: FakeTimer) -> None:
        self.timers.remove(timer)
        timer.fn()
        self.run()


class Sent:
    def __init__(self, node_id: int | None, request: Any, timeout_ms: int | None) -> None:
        self.node_id = node_id
        self.request = request
        self.timeout_ms = timeout_ms
        self.future: Future = Future()


class FakeLink:
    """Implements ``kafka_fast.cluster.link.ClusterLink``."""

    def __init__(self, node: int | None = 1, versions: dict[int, int] | None = None) -> None:
        self.loop = FakeLoop()
        self.cluster = ClusterView()
        self.started = 0
        self.sent: list[Sent] = []
        self.views: list[ClusterView] = []
        self.learned: list[tuple[int, str, int]] = []
        self.rebootstrapped: list[str] = []
        self.node = node
        self.versions = versions or {}

    def ensure_started(self) -> None:
        self.started += 1

    def send(self, node_id: int, request: Any) -> Future:
        self.sent.append(Sent(node_id, request, None))
        return self.sent[-1].future

    def send_any(self, request: Any, *, timeout_ms: int | None = None) -> Future:
        self.sent.append(Sent(None, request, timeout_ms))
        return self.sent[-1].future

    def api_version(self, node_id: int, api_key: int) -> int | None:
        return self.versions.get(api_key)

    def pick_node(self, exclude: set[int]) -> int | None:
        return self.node

    def set_cluster(self, view: ClusterView) -> None:
        self.cluster = view
        self.views.append(view)

    def learn_broker(self, node_id: int, host: str, port: int) -> None:
        self.learned.append((node_id, host, port))

    def rebootstrap(self, reason: str) -> None:
        self.rebootstrapped.append(reason)


def through_codec(message: Any, version: int) -> Any:
    """``message`` as a connection would hand it over: encoded, then decoded."""
    return type(message).decode(message.encode(version), version)


def answer(sent: Sent, response: Any, version: int, node_id: int) -> None:
    fut = sent.future
    fut.node_id = node_id
    fut.api_version = version
    fut.set_result(through_codec(response, version))
