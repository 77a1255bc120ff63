"""KafkaClient: one I/O thread, connections to the brokers, the cluster view and coordinators.

Each broker gets one connection per lane in use (``kafka_fast.net.lanes``): requests a user
waits on never queue behind a long-polling Fetch or a coordinator's held JoinGroup.

Threading: every public method may be called from any thread. Connection state lives on the
I/O thread; requests submitted from other threads are queued and the selector is woken.
Futures are resolved on the I/O thread, so their callbacks run there and must not block.
User callbacks (``error_cb``, ``throttle_cb``) are never called on the I/O thread: events go
to ``events`` and are dispatched by ``serve_events()`` (see ``kafka_fast.net.events``).
"""

from __future__ import annotations

import logging
import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ..cluster.bootstrap import bootstrap_addresses, canonical_addresses
from ..cluster.coordinators import CoordinatorCache
from ..cluster.metadata import MetadataManager
from ..cluster.view import ClusterView
from ..errors import KafkaError, KafkaException
from ..stats import BrokerView, ClientStats
from .connection import BrokerConnection, State
from .events import EventQueue, ThrottleEvent
from .framing import BufferPool
from .lanes import Lane
from .lock_policy import LockPolicy
from .loop import IOLoop, TimerHandle
from .oauthbearer import OAuthError, TokenSource
from .request import ReportingFuture, Request, kafka_exception
from .settings import ConnectionSettings

#: How often request deadlines and set-up deadlines are checked while a connection has
#: requests queued or in flight, or is being set up (seconds).
TIMEOUT_CHECK_INTERVAL = 0.05
#: How often connections are checked while none of them waits for anything (only
#: ``connections.max.idle.ms`` to enforce): an idle client wakes once a second, not 20 times.
IDLE_CHECK_INTERVAL = 1.0

#: librdkafka's broker state names for the statistics.
_STATE_NAMES = {State.CONNECTING: "CONNECT", State.TLS: "SSL_HANDSHAKE",
                State.VERSIONS: "APIVERSION_QUERY", State.AUTH: "AUTH_HANDSHAKE",
                State.READY: "UP"}


class KafkaClient:
    """The network client shared by a producer, consumer or admin client.

    ``config`` is a validated ``Config`` (``kafka_fast.config.make_config``).
    ``serve_events_thread=True`` starts a thread that dispatches ``error_cb``/``throttle_cb``
    events itself (for clients without a ``poll()``, like the AdminClient).
    ``client_type`` ("producer" or "consumer") is the ``type`` of its statistics; ``stats``
    (``kafka_fast.stats.ClientStats``) owns the counters its connections update, and every
    ``statistics.interval.ms`` a timer on the I/O thread queues a "stats" event for
    ``stats_cb``.

    It is the ``ConnectionEvents`` listener of its connections (``kafka_fast.net.events``)
    and the ``ClusterLink`` of its metadata manager and coordinator cache
    (``kafka_fast.cluster.link``).
    """

    def __init__(self, config: Any, *, name: str = "", serve_events_thread: bool = False,
                 client_type: str = "producer") -> None:
        self.config = config
        self.name = name or config["client.id"]
        self.log: logging.Logger = config["logger"] or logging.getLogger("kafka_fast.net")
        self.settings = ConnectionSettings.from_config(config)
        tokens = self.settings.oauth_tokens
        if tokens is not None and tokens.eager:
            _first_token(tokens)
        self.loop = IOLoop(name=f"kafka_fast-io-{self.name}", logger=self.log)
        self.pool = BufferPool()
        #: when the I/O thread's socket calls give the interpreter lock up: bulk calls of
        #: the application (``produce_batch``, ``consume_batch``) mark themselves here
        self.lock_policy = LockPolicy()
        self.events = EventQueue(config["error_cb"], config["throttle_cb"], self.log,
                                 config["stats_cb"])
        self.stats = ClientStats(self.name, config["client.id"], client_type)
        sources = self.stats.sources
        sources.brokers = self.broker_views
        sources.leader = lambda topic, partition: self.cluster.leader(topic, partition)
        sources.replyq = self.events.queue.qsize
        self._stats_interval = config["statistics.interval.ms"] / 1000.0
        addresses = bootstrap_addresses(config["bootstrap.servers"])
        if config["client.dns.lookup"] == "resolve_canonical_bootstrap_servers_only":
            addresses = canonical_addresses(addresses)
        self._bootstrap = {-(i + 1): addr for i, addr in enumerate(addresses)}
        if not self._bootstrap:
            # librdkafka's notice (level 5, CONFWARN), word for word; no error_cb.
            self.log.info("No `bootstrap.servers` configured: client will not be able to "
                          "connect to Kafka cluster", extra={"kafka_event": "CONFWARN"})
        self._extra_brokers: dict[int, tuple[str, int]] = {}
        #: ``metadata.recovery.strategy=rebootstrap``: forget learned brokers for the
        #: bootstrap list when they cannot give metadata (KIP-899, KIP-1102).
        self.rebootstrap_enabled = config["metadata.recovery.strategy"] == "rebootstrap"
        #: How many times the client went back to the bootstrap list.
        self.rebootstraps = 0
        self._conns: dict[int, BrokerConnection] = {}  # the DEFAULT lane
        self._lanes: dict[tuple[int, Lane], BrokerConnection] = {}  # the other lanes
        self._submitted: deque[Request] = deque()
        self.cluster: ClusterView = ClusterView()
        self.metadata = MetadataManager(self, config)
        self.coordinators = CoordinatorCache(self, config)
        self._all_down_reported = False
        self._first_use: dict[str, float] = {}
        self._lookup_interval = config["retry.backoff.ms"] / 1000.0
        self._closed = False
        self._check_interval = TIMEOUT_CHECK_INTERVAL
        self._check_timer: TimerHandle | None = None
        self._started = False
        self._start_lock = threading.Lock()
        self._event_thread: threading.Thread | None = None
        self._serve_events_thread = serve_events_thread
        self.loop.add_tick(self._drain_submitted)
        self._internal_reported: tuple[str, float] | None = None
        self.loop.on_error = self._internal_error
        if tokens is not None and tokens.eager:
            events = self.events
            # The renewals hold no reference to the client: one that is never closed (its
            # owner's constructor failed, or it was dropped) ends them when it is collected.
            client = weakref.ref(self)
            tokens.start_refresh(
                lambda exc: events.error(KafkaError.of(
                    KafkaError._AUTHENTICATION,
                    f"Failed to acquire SASL OAUTHBEARER token: {exc}")),
                alive=lambda: (c := client()) is not None and not c.closed)

    def _internal_error(self, exc: BaseException) -> None:
        """An exception escaped I/O-thread code: tell the application (``error_cb``), once a
        second at most for the same failure (code that fails on every loop iteration must
        not flood the event queue)."""
        if self._closed:
            return
        reason = f"internal error on the I/O thread: {type(exc).__name__}: {exc}"
        now = time.monotonic()
        last = self._internal_reported
        if last is not None and last[0] == reason and now - last[1] < 1.0:
            return
        self._internal_reported = (reason, now)
        self.events.error(KafkaError.of(KafkaError._FAIL, reason))

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> KafkaClient:
        """Start the I/O thread (idempotent) and the first metadata request."""
        with self._start_lock:
            if self._started:
                return self
            if self._closed:
                raise KafkaException(KafkaError.of(KafkaError._DESTROY, "client is closed"))
            self._started = True
        self.loop.start()
        self.loop.call_soon(self._on_start)
        if self._serve_events_thread:
            self._event_thread = threading.Thread(
                target=self._serve_events_forever, name=f"kafka_fast-events-{self.name}",
                daemon=True)
            self._event_thread.start()
        return self

    def ensure_started(self) -> None:
        """Start the client if it is not started yet."""
        if not self._started:
            self.start()

    def _on_start(self) -> None:
        if self._closed:  # closed before the I/O thread ran its first callback
            return
        self._schedule_checks(TIMEOUT_CHECK_INTERVAL)
        if self._stats_interval > 0 and self.events.stats_cb is not None:
            self.loop.call_later(self._stats_interval, self._emit_stats)
        self.metadata.start_periodic()
        self.metadata.submit(None, False)

    @property
    def closed(self) -> bool:
        """True once ``close()`` has begun."""
        return self._closed

    def close(self, timeout: float | None = 5.0) -> None:
        """Fail everything outstanding with _DESTROY, close sockets, stop the I/O thread.

        Requests that I/O-thread code (timers, callbacks, response handlers) makes after
        close has begun fail with _DESTROY instead of raising there: the I/O thread runs on
        until it reaches the shutdown, and would otherwise log a "client is closed" error.
        """
        if self._closed:
            return
        self._closed = True
        if self.settings.oauth_tokens is not None:
            self.settings.oauth_tokens.stop_refresh()
        if self._started:
            self.loop.call_soon(self._shutdown)
            self.loop.stop(timeout)
        else:
            self.loop.stop(0)
        if self._event_thread is not None:
            self.events.queue.put(None)
            self._event_thread.join(timeout)

    def _shutdown(self) -> None:
        exc = _closed_error()
        err = exc.args[0]
        while self._submitted:
            self._submitted.popleft().fail(exc)
        self.metadata.fail_all(exc)
        self.coordinators.fail_all(exc)
        for conn in self._all_connections():
            if conn.state != State.DISCONNECTED:
                conn.close(err, backoff=False)
            while conn.pending:
                conn.pending.popleft().fail(exc)

    def __enter__(self) -> KafkaClient:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- events -----------------------------------------------------------------------------
    def serve_events(self, timeout: float = 0.0, max_events: int | None = None) -> int:
        """Call ``error_cb``/``throttle_cb`` for queued client events on this thread."""
        return self.events.serve(timeout, max_events)

    # -- statistics -------------------------------------------------------------------------
    def _emit_stats(self) -> None:
        """The statistics timer (I/O thread): queue a report for ``stats_cb``, re-arm."""
        if self._closed:
            return
        self.loop.call_later(self._stats_interval, self._emit_stats)
        self.events.stats(self.stats.to_json())

    def metrics(self) -> dict[str, int | float]:
        """The flat metrics snapshot (``kafka_fast.stats.ClientStats.metrics``)."""
        return self.stats.metrics()

    def broker_views(self) -> list[BrokerView]:
        """Each broker's connections taken together, for the statistics (any thread)."""
        by_node: dict[int, list[BrokerConnection]] = {}
        for conn in self._all_connections():
            by_node.setdefault(conn.node_id, []).append(conn)
        views = []
        for node_id, conns in by_node.items():
            first = conns[0]
            best = max(conns, key=lambda c: c.state)
            if best.state == State.DISCONNECTED:
                state = "DOWN" if any(c.attempts for c in conns) else "INIT"
            else:
                state = _STATE_NAMES[best.state]
            where = f"{first.host}:{first.port}"
            views.append(BrokerView(
                node_id, f"{where}/{node_id if node_id >= 0 else 'bootstrap'}", where, state,
                sum(len(c.pending) for c in conns), sum(len(c.inflight) for c in conns)))
        return views

    def _serve_events_forever(self) -> None:
        q = self.events.queue
        while True:
            event = q.get()
            if event is None:
                return
            try:
                self.events.dispatch(event)
            except Exception:
                self.log.exception("client event callback raised")

    # -- scheduling on the I/O thread ---------------------------------------------------------
    def call_soon(self, fn: Callable[[], object]) -> None:
        self.ensure_started()
        self.loop.call_soon(fn)

    def call_later(self, delay_s: float, fn: Callable[[], object]) -> TimerHandle:
        self.ensure_started()
        return self.loop.call_later(delay_s, fn)

    def add_poll_hook(self, fn: Callable[[], object]) -> None:
        """Call ``fn()`` on every I/O-loop iteration; a numeric return value is the most
        seconds the loop may wait before the next iteration."""
        self.ensure_started()
        self.loop.add_poll_hook(fn)

    def remove_poll_hook(self, fn: Callable[[], object]) -> None:
        self.loop.remove_poll_hook(fn)

    def wakeup(self) -> None:
        self.loop.wakeup()

    # -- sending ----------------------------------------------------------------------------
    def _new_request(self, message: Any, version: int | None, timeout_ms: int | None,
                     node_id: int | None, any_node: bool,
                     lane: Lane = Lane.DEFAULT) -> tuple[Request, ReportingFuture]:
        if self._closed and not self.loop.in_loop_thread():
            raise KafkaException(KafkaError.of(KafkaError._DESTROY, "client is closed"))
        timeout = (self.settings.request_timeout if timeout_ms is None else timeout_ms / 1000.0)
        fut = ReportingFuture(self._internal_error, self.log)
        req = Request(message, version, fut, time.monotonic() + timeout, node_id, any_node,
                      lane=lane)
        return req, fut

    def _submit(self, req: Request) -> None:
        if self._closed:  # I/O-thread code, or a call that raced with close()
            req.fail(_closed_error())
            return
        self.ensure_started()
        self._submitted.append(req)
        self.loop.wakeup()

    def send(self, node_id: int, request: Any, *, version: int | None = None,
             timeout_ms: int | None = None, lane: Lane = Lane.DEFAULT) -> ReportingFuture:
        """Send ``request`` to broker ``node_id``; a Future of the decoded response.

        ``lane`` picks the connection to the broker: ``Lane.COORDINATOR`` for group and
        transaction coordinator requests, ``Lane.FETCH`` for long-polling Fetches.

        The Future fails with KafkaException: _TRANSPORT (connection lost or refused),
        _TIMED_OUT (``request.timeout.ms`` or ``timeout_ms``), _AUTHENTICATION, _SSL,
        _UNKNOWN_BROKER, _UNSUPPORTED_FEATURE, _DESTROY. Produce with acks=0 resolves
        with None once written. The resolved Future carries ``api_version`` and ``node_id``.
        """
        req, fut = self._new_request(request, version, timeout_ms, node_id, False, lane)
        fut.node_id = node_id
        self._submit(req)
        return fut

    def send_any(self, request: Any, *, version: int | None = None,
                 timeout_ms: int | None = None) -> ReportingFuture:
        """Send to the least-loaded broker (bootstrap addresses while none is known).

        A request not yet written when its connection fails is tried on another broker.
        """
        req, fut = self._new_request(request, version, timeout_ms, None, True)
        self._submit(req)
        return fut

    def _drain_submitted(self) -> None:
        q = self._submitted
        while q:
            self._dispatch(q.popleft())

    def _dispatch(self, req: Request) -> None:
        if self._closed:  # submitted just before close(): never open a connection for it
            req.fail(_closed_error())
            return
        if req.any_node:
            node = self.pick_node(req.tried or set())
            if node is None and not self._known_nodes():
                self._wait_for_no_broker(req)
                return
            if node is None:
                req.fail(kafka_exception(KafkaError._ALL_BROKERS_DOWN,
                                         "no broker available for the request"))
                return
            req.node_id = node
            if req.future is not None:
                req.future.node_id = node
        assert req.node_id is not None
        conn = self._connection(req.node_id, Lane(req.lane))
        if conn is None:
            req.fail(kafka_exception(KafkaError._UNKNOWN_BROKER,
                                     f"unknown broker node id {req.node_id}", retriable=True))
            return
        conn.enqueue(req)
        self._watch_deadlines()

    def _wait_for_no_broker(self, req: Request) -> None:
        """No ``bootstrap.servers`` and no broker known: like librdkafka, a request for any
        broker waits out its deadline (nothing can answer it) and then times out."""
        def expire() -> None:
            req.fail(kafka_exception(KafkaError._TIMED_OUT, "no broker to send the request "
                                     "to: no bootstrap.servers configured"))

        self.loop.call_later(max(0.0, req.deadline - time.monotonic()), expire)

    # -- ConnectionEvents (kafka_fast.net.events), called by connections on the I/O thread ---
    def reroute(self, req: Request, failed: BrokerConnection) -> bool:
        """``req`` (sent to any broker) could not be written on ``failed``: try another."""
        if req.tried is None:
            req.tried = set()
        req.tried.add(failed.node_id)
        if time.monotonic() >= req.deadline or self._closed:
            return False
        node = self.pick_node(req.tried)
        if node is None:
            return False
        self._submitted.append(req)
        return True

    def connection_ready(self, conn: BrokerConnection) -> None:
        """A connection finished its set-up."""
        self._all_down_reported = False

    def connection_down(self, conn: BrokerConnection, error: KafkaError | None,
                        was_ready: bool, terminal: bool) -> None:
        """A connection closed: drop retired ones, report ``error`` (and all brokers down)."""
        if conn.retire_when_idle or (conn.node_id < 0 and self.cluster.brokers):
            if self._conns.get(conn.node_id) is conn and not conn.pending:
                del self._conns[conn.node_id]
        if error is None or self._closed:
            return
        self.events.error(error)
        if not self._all_down_reported:
            nodes = self._known_nodes()
            if nodes and all(self._down(n) for n in nodes):
                self._all_down_reported = True
                self.events.error(KafkaError.of(
                    KafkaError._ALL_BROKERS_DOWN,
                    f"{len(nodes)}/{len(nodes)} brokers are down"))

    def throttled(self, conn: BrokerConnection, throttle_ms: int) -> None:
        """A broker throttled this client: queue a ThrottleEvent for ``throttle_cb``."""
        self.events.throttle(ThrottleEvent(conn.name, conn.node_id, throttle_ms / 1000.0))

    # -- connections --------------------------------------------------------------------------
    def _address(self, node_id: int) -> tuple[str, int] | None:
        b = self.cluster.brokers.get(node_id)
        if b is not None:
            return b.host, b.port
        if node_id < 0:
            return self._bootstrap.get(node_id)
        return self._extra_brokers.get(node_id)

    def _connection(self, node_id: int, lane: Lane = Lane.DEFAULT) -> BrokerConnection | None:
        if lane != Lane.DEFAULT and node_id >= 0:
            return self._lane_connection(node_id, lane)
        conn = self._conns.get(node_id)
        if conn is None:
            addr = self._address(node_id)
            if addr is None:
                return None
            conn = self._conns[node_id] = self._new_connection(node_id, addr)
        return conn

    def _lane_connection(self, node_id: int, lane: Lane) -> BrokerConnection | None:
        conn = self._lanes.get((node_id, lane))
        if conn is None:
            addr = self._address(node_id)
            if addr is None:
                return None
            conn = self._lanes[(node_id, lane)] = self._new_connection(node_id, addr, lane)
        return conn

    def _new_connection(self, node_id: int, addr: tuple[str, int],
                        lane: Lane = Lane.DEFAULT) -> BrokerConnection:
        return BrokerConnection(node_id, addr[0], addr[1], self.settings, self, self.loop,
                                self.pool, self.log, lane, self.stats.counters.broker(node_id),
                                self.lock_policy)

    def _existing(self, node_id: int, lane: Lane) -> BrokerConnection | None:
        if lane == Lane.DEFAULT:
            return self._conns.get(node_id)
        return self._lanes.get((node_id, lane))

    def _all_connections(self) -> list[BrokerConnection]:
        return [*self._conns.values(), *self._lanes.values()]

    # -- ClusterLink (kafka_fast.cluster.link) -----------------------------------------------
    def learn_broker(self, node_id: int, host: str, port: int) -> None:
        """Remember a broker's address from a FindCoordinator answer."""
        if node_id not in self.cluster.brokers:
            self._extra_brokers[node_id] = (host, port)

    def _known_nodes(self) -> list[int]:
        return list(self.cluster.brokers) or list(self._bootstrap)

    def pick_node(self, exclude: set[int]) -> int | None:
        """The least-loaded usable node: ready, then connecting, then connectable."""
        best = None
        best_load = 0
        connecting = None
        rebootstrapped = not self.cluster.brokers
        for node_id, conn in self._conns.items():
            if node_id in exclude or conn.retire_when_idle or (rebootstrapped and node_id >= 0):
                continue
            if conn.state == State.READY:
                load = conn.load()
                if best is None or load < best_load:
                    best, best_load = node_id, load
            elif conn.state != State.DISCONNECTED and connecting is None:
                connecting = node_id
        if best is not None:
            return best
        if connecting is not None:
            return connecting
        now = time.monotonic()
        brokers = [n for n in self.cluster.brokers if n not in exclude]
        usable = [n for n in brokers if self._connectable(n, now)]
        if (not usable and self.rebootstrap_enabled and self.cluster.brokers
                and all(self._down(n) for n in self.cluster.brokers)):
            # Every known broker is unreachable (KIP-899): start again from bootstrap.
            self.rebootstrap("every known broker is unreachable")
        if not self.cluster.brokers:
            usable = [n for n in self._bootstrap if n not in exclude
                      and self._connectable(n, now)]
            brokers = [n for n in self._bootstrap if n not in exclude]
        if usable:
            fresh = [n for n in usable if n not in self._conns]
            if fresh:
                return fresh[0] if fresh[0] < 0 else random.choice(fresh)
            return min(usable, key=lambda n: self._conns[n].next_attempt)
        if brokers:
            return min(brokers, key=lambda n: self._conns[n].next_attempt
                       if n in self._conns else 0.0)
        return None

    def rebootstrap(self, reason: str) -> None:
        """Forget the brokers learned from metadata and go back to ``bootstrap.servers``
        (I/O thread): requests for any broker are sent to a bootstrap address until the next
        Metadata answer names the cluster's brokers again. Topics stay known; connections
        to the learned brokers stay until they close. Does nothing while no broker is
        known, or with ``metadata.recovery.strategy=none``."""
        view = self.cluster
        if not self.rebootstrap_enabled or not view.brokers:
            return
        self.rebootstraps += 1
        self.log.info("rebootstrapping from %s: %s (forgetting brokers %s)",
                      ",".join(f"{h}:{p}" for h, p in self._bootstrap.values()), reason,
                      sorted(view.brokers), extra={"kafka_event": "rebootstrap"})
        for node_id in list(self._bootstrap):
            conn = self._conns.get(node_id)
            if conn is not None and conn.state == State.DISCONNECTED and not conn.pending:
                del self._conns[node_id]  # dialled afresh, without the old backoff
            elif conn is not None:
                conn.retire_when_idle = False
        self.cluster = ClusterView(brokers={}, topics=view.topics, cluster_id=view.cluster_id,
                                   controller_id=-1, updated=view.updated, source_node=-1)

    def _connectable(self, node_id: int, now: float) -> bool:
        conn = self._conns.get(node_id)
        return conn is None or (conn.state == State.DISCONNECTED and now >= conn.next_attempt)

    def _down(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.state == State.DISCONNECTED and conn.last_failed

    def set_cluster(self, view: ClusterView) -> None:
        """Install a new view: follow broker address changes, adopt bootstrap connections."""
        self.cluster = view
        by_addr = {(b.host, b.port): b.node_id for b in view.brokers.values()}
        for node_id, conn in list(self._conns.items()):
            if node_id >= 0:
                b = view.brokers.get(node_id)
                if b is not None:
                    conn.update_address(b.host, b.port)
                continue
            target = by_addr.get((conn.host, conn.port))
            if target is not None and target not in self._conns:
                del self._conns[node_id]
                conn.node_id = target
                conn.counters = self.stats.counters.broker(target)
                self._conns[target] = conn
            else:
                conn.retire_when_idle = True
                if conn.state == State.DISCONNECTED and not conn.pending:
                    del self._conns[node_id]
        for (node_id, _), conn in self._lanes.items():
            b = view.brokers.get(node_id)
            if b is not None:
                conn.update_address(b.host, b.port)
        for node_id in list(self._extra_brokers):
            if node_id in view.brokers:
                del self._extra_brokers[node_id]

    def _check_timeouts(self) -> None:
        now = time.monotonic()
        waiting = False
        for conn in self._all_connections():
            conn.check_timeouts(now)
            waiting = waiting or conn.has_deadlines()
        self._schedule_checks(TIMEOUT_CHECK_INTERVAL if waiting else IDLE_CHECK_INTERVAL)

    def _schedule_checks(self, interval: float) -> None:
        self._check_interval = interval
        self._check_timer = self.loop.call_later(interval, self._check_timeouts)

    def _watch_deadlines(self) -> None:
        """A request was queued or a connection started: check deadlines at the short
        interval again if the checks had slowed down (I/O thread)."""
        if self._check_interval > TIMEOUT_CHECK_INTERVAL and self._check_timer is not None:
            self._check_timer.cancel()
            self._schedule_checks(TIMEOUT_CHECK_INTERVAL)

    # -- node state -------------------------------------------------------------------------
    def node_ready(self, node_id: int, lane: Lane = Lane.DEFAULT) -> bool:
        """True if ``node_id``'s connection for ``lane`` is connected, negotiated and has room
        in its window.

        A disconnected node starts connecting (after its reconnect backoff).
        """
        conn = self._existing(node_id, lane)
        if conn is not None and conn.has_capacity():
            return True
        if conn is None or conn.state == State.DISCONNECTED:
            self.call_soon(lambda: self._connect(node_id, lane))
        return False

    def _connect(self, node_id: int, lane: Lane = Lane.DEFAULT) -> None:
        conn = self._connection(node_id, lane)
        if conn is not None and conn.state == State.DISCONNECTED:
            if conn.blocked is None or time.monotonic() >= conn.next_attempt:
                conn.ensure_connecting()
                self._watch_deadlines()

    def node_unreachable(self, node_id: int, lane: Lane = Lane.DEFAULT) -> bool:
        """True if the last connection to ``node_id`` on ``lane`` failed and is not up again:
        its leadership may have moved (callers refresh metadata)."""
        conn = self._existing(node_id, lane)
        return conn is not None and conn.state != State.READY and conn.last_failed

    def in_flight(self, node_id: int, lane: Lane = Lane.DEFAULT) -> int:
        conn = self._existing(node_id, lane)
        return len(conn.inflight) if conn is not None else 0

    def api_version(self, node_id: int, api_key: int) -> int | None:
        """The version negotiated with ``node_id`` for ``api_key`` on any of its connections
        (None if unknown)."""
        for lane in Lane:
            conn = self._existing(node_id, lane)
            if conn is not None and api_key in conn.versions:
                return conn.versions[api_key]
        return None

    def connection_state(self, node_id: int, lane: Lane = Lane.DEFAULT) -> str:
        """DISCONNECTED, CONNECTING, TLS, VERSIONS, AUTH or READY."""
        conn = self._existing(node_id, lane)
        return conn.state.name if conn is not None else State.DISCONNECTED.name

    # -- cluster ------------------------------------------------------------------------------
    def request_metadata(self, topics: list[str] | None = None, *,
                         all_topics: bool = False) -> Future:
        """Refresh metadata; a Future of the new ClusterView (concurrent requests coalesce).

        ``topics`` None refreshes the topics asked for so far (only brokers if none);
        ``all_topics`` asks for every topic in the cluster.
        """
        return self.metadata.request(topics, all_topics)

    def cluster_id(self, timeout: float | None = None) -> str | None:
        """The cluster id from metadata, asking the cluster when none is known yet; None when
        ``timeout`` seconds pass first (None or negative: wait)."""
        if self.cluster.cluster_id is None:
            wait = None if timeout is None or timeout < 0 else timeout
            try:
                self.request_metadata().result(wait)
            except TimeoutError:
                return None
        return self.cluster.cluster_id

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """Credentials for the next SASL logins; established connections keep theirs."""
        for name, value in (("sasl.username", username), ("sasl.password", password)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
            self.settings.config.replace(name, value)

    def wait_metadata(self, topics: list[str] | None = None,
                      timeout: float | None = None) -> ClusterView:
        """Block until every topic in ``topics`` is known with a leader for each partition.

        Raises KafkaException: the topic's error if it stays in error (at once for
        non-retriable ones such as TOPIC_AUTHORIZATION_FAILED), else _TIMED_OUT.
        """
        if self.loop.in_loop_thread():
            raise RuntimeError("wait_metadata() would block the I/O thread")
        timeout = self.settings.request_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        names = list(topics or [])
        delay = self.config["retry.backoff.ms"] / 1000.0
        last: KafkaError | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                view = self.request_metadata(names).result(remaining)
            except FutureTimeout:
                break
            except KafkaException as exc:
                last = exc.args[0]
                if not last.retriable() and last.code() not in (KafkaError._TRANSPORT,
                                                                 KafkaError._TIMED_OUT):
                    raise
            else:
                last = None
                if not view.brokers:
                    last = KafkaError.of(KafkaError._TRANSPORT, "no brokers in metadata")
                for name in names:
                    info = view.topics.get(name)
                    if info is None:
                        last = KafkaError.of(KafkaError._UNKNOWN_TOPIC, f"topic {name} not known")
                    elif info.error is not None:
                        if not info.error.retriable():
                            raise KafkaException(info.error)
                        last = info.error
                    elif not info.partitions or any(
                            p.leader < 0 for p in info.partitions.values()):
                        last = KafkaError.of(KafkaError.LEADER_NOT_AVAILABLE,
                                          f"topic {name} has partitions without a leader")
                if last is None:
                    return view
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, self.config["retry.backoff.max.ms"] / 1000.0)
        if last is not None and last.code() != KafkaError._TRANSPORT:
            raise KafkaException(KafkaError.of(last.code(), f"{last.str()} (after {timeout:g}s)"))
        raise KafkaException(KafkaError.of(KafkaError._TIMED_OUT,
                                        f"metadata not available after {timeout:g}s"))

    def leader(self, topic: str, partition: int) -> int | None:
        """The partition leader from the cached view; an unknown topic is looked up (async)."""
        view = self.cluster
        node = view.leader(topic, partition)
        if node is None and topic not in view.topics:
            now = time.monotonic()
            if now - self._first_use.get(topic, -1e9) >= self._lookup_interval:
                self._first_use[topic] = now
                self.request_metadata([topic])
        return node

    def coordinator(self, key_type: int, key: str) -> Future:
        """A Future of the node id coordinating ``key`` (0 group, 1 transaction); cached."""
        return self.coordinators.lookup(key_type, key)

    def invalidate_coordinator(self, key_type: int, key: str) -> None:
        self.coordinators.invalidate(key_type, key)


def _closed_error() -> KafkaException:
    """What requests of a closed client fail with."""
    return KafkaException(KafkaError.of(KafkaError._DESTROY, "client closed"))


def _first_token(tokens: TokenSource) -> None:
    """Call ``oauth_cb`` while the client is built, as confluent-kafka does: a callback that
    raises or returns no usable token fails the constructor."""
    try:
        tokens.prime()
    except OAuthError as exc:
        raise KafkaException(KafkaError.of(KafkaError.SASL_AUTHENTICATION_FAILED,
                                        f"OAuth token not set: {exc}")) from None
