"""One TCP connection to one broker: set-up (TLS, ApiVersions, SASL), framing, in-flight window.

Everything here runs on the client's I/O thread. Set-up goes CONNECTING -> TLS (if any) ->
VERSIONS (ApiVersions) -> AUTH (SASL, if any) -> READY. Requests queue in ``pending`` until
the connection is READY and has room in its window of ``max.in.flight`` requests; responses
are matched by correlation id (an id that matches nothing closes the connection).

Re-authentication (KIP-368): when SaslAuthenticate v1+ reports a session lifetime, a timer
fires at a random point between 85% and 95% of it; the connection then sends nothing new,
waits for the responses in flight, and runs SaslHandshake + SaslAuthenticate again on the same
socket (state AUTH, bounded by the set-up timeout) before going on with the requests queued
meanwhile, in order. A failed re-authentication closes the connection with _AUTHENTICATION.
"""

from __future__ import annotations

import enum
import errno
import logging
import random
import socket
import ssl
import struct
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError, KafkaException, ProtocolError
from ..protocol import API_KEYS, API_VERSIONS, frame_request
from ..protocol.headers import decode_response_header, response_header_version
from ..protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from ..shared.backoff import Backoff
from ..stats.counters import BrokerCounters
from .framing import ConnectionClosed, FrameReader, FrameWriter
from .lanes import Lane
from .lock_policy import LockPolicy
from .oauthbearer import OAuthToken, TokenResult
from .request import Request, VersionedRequest, kafka_exception
from .sasl import SaslError, SaslMechanism, make_mechanism
from .settings import ConnectionSettings
from .versions import choose, negotiate

if TYPE_CHECKING:
    from .events import ConnectionEvents
    from .framing import BufferPool
    from .loop import IOLoop, TimerHandle

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_READ = 1  # selectors.EVENT_READ
_WRITE = 2  # selectors.EVENT_WRITE
_API_VERSIONS = 18
_UNSUPPORTED_VERSION = 35
#: Re-authenticate at a random point of this share of the broker's session lifetime (KIP-368).
REAUTH_WINDOW = (0.85, 0.95)


class State(enum.IntEnum):
    DISCONNECTED = 0
    CONNECTING = 1
    TLS = 2
    VERSIONS = 3
    AUTH = 4
    READY = 5


def _holds_views(cls: type) -> bool:
    """True if decoded ``cls`` objects keep memoryviews of the input (``records`` fields)."""
    seen: set[type] = set()

    def walk(c: type) -> bool:
        if c in seen:
            return False
        seen.add(c)
        for f in getattr(c, "FIELDS", ()):
            if "records" in f.type or (f.struct is not None and walk(f.struct)):
                return True
        return False

    return walk(cls)


_OWNING: dict[int, bool] = {}


def owns_buffer(api_key: int) -> bool:
    """True if responses of ``api_key`` get a buffer of their own (records stay views of it)."""
    owning = _OWNING.get(api_key)
    if owning is None:
        owning = _OWNING[api_key] = _holds_views(API_KEYS[api_key][1])
    return owning


def _decode_or_none(cls: Any, body: Any, version: int | None) -> Any:
    try:
        return cls.decode(body, version)
    except ProtocolError:
        return None


class BrokerConnection:
    """Connection state for one broker node (``node_id`` < 0 for bootstrap addresses) and
    one ``lane`` of it (``kafka_fast.net.lanes``).

    It runs on ``loop``, reads responses into buffers from ``pool`` and reports to
    ``listener`` (``ConnectionEvents``).
    """

    def __init__(self, node_id: int, host: str, port: int, settings: ConnectionSettings,
                 listener: ConnectionEvents, loop: IOLoop, pool: BufferPool,
                 log: logging.Logger, lane: Lane = Lane.DEFAULT,
                 counters: BrokerCounters | None = None,
                 lock_policy: LockPolicy | None = None) -> None:
        self.node_id = node_id
        #: requests, bytes and round-trip times of this broker (shared by its lanes)
        self.counters = counters if counters is not None else BrokerCounters()
        self.lane = lane
        self.host = host
        self.port = port
        self.settings = settings
        self.listener = listener
        self.loop = loop
        self.pool = pool
        #: when socket calls give the interpreter lock up (shared by the client's connections)
        self.lock_policy = lock_policy if lock_policy is not None else LockPolicy()
        self.log = log
        self.state = State.DISCONNECTED
        self.sock: socket.socket | None = None
        self.pending: deque[Request] = deque()
        self.inflight: dict[int, Request] = {}
        self.versions: dict[int, int] = {}
        self.broker_ranges: dict[int, tuple[int, int]] = {}
        self.backoff = Backoff(settings.reconnect_backoff_ms, settings.reconnect_backoff_max_ms)
        self.next_attempt = 0.0  # monotonic time before which no new attempt is made
        self.blocked: KafkaError | None = None  # terminal error (auth/TLS) until next_attempt
        self.attempts = 0
        self.last_failed = False
        self.last_activity = time.monotonic()
        self.throttled_until = 0.0
        self.retire_when_idle = False
        self._reconnect_timer: TimerHandle | None = None
        self._throttle_timer: TimerHandle | None = None
        self._setup_deadline = 0.0
        self._corr = 0
        self._events = 0
        self._addrs: list[tuple] = []
        self._addr_index = 0
        self._reader: FrameReader | None = None
        self._writer = FrameWriter(self._written)
        self._sasl: SaslMechanism | None = None
        self._reauth_timer: TimerHandle | None = None
        self._reauth_due = False  # the session ends soon: send nothing new, re-authenticate
        self._reauthenticating = False
        #: Successful re-authentications on this connection object (for statistics and tests).
        self.reauthentications = 0

    # -- public (I/O thread) ----------------------------------------------------------------
    @property
    def name(self) -> str:
        node = self.node_id if self.node_id >= 0 else "bootstrap"
        lane = "" if self.lane == Lane.DEFAULT else f"/{self.lane.name.lower()}"
        return f"{self.host}:{self.port}/{node}{lane}"

    @property
    def ready(self) -> bool:
        return self.state == State.READY

    def has_capacity(self) -> bool:
        return (self.state == State.READY and not self.pending and not self._reauth_due
                and len(self.inflight) < self.settings.max_in_flight)

    def load(self) -> int:
        return len(self.inflight) + len(self.pending)

    def enqueue(self, req: Request) -> None:
        """Queue ``req``; connect if needed. Fails it at once while a terminal error holds."""
        if self.state == State.DISCONNECTED:
            now = time.monotonic()
            if self.blocked is not None and now < self.next_attempt:
                req.fail(KafkaException(self.blocked))
                return
            self.pending.append(req)
            self.ensure_connecting(now)
            return
        self.pending.append(req)
        if self.state == State.READY:
            self.pump()

    def ensure_connecting(self, now: float | None = None) -> None:
        """Start connecting now, or when the reconnect backoff allows."""
        if self.state != State.DISCONNECTED:
            return
        now = time.monotonic() if now is None else now
        if now >= self.next_attempt:
            self.connect()
        elif self._reconnect_timer is None:
            self._reconnect_timer = self.loop.call_later(
                self.next_attempt - now, self._reconnect_due)

    def _reconnect_due(self) -> None:
        self._reconnect_timer = None
        if self.state == State.DISCONNECTED and self.pending:
            self.connect()

    def update_address(self, host: str, port: int) -> None:
        if (host, port) == (self.host, self.port):
            return
        self.log.info("broker %d moved from %s:%d to %s:%d", self.node_id, self.host,
                      self.port, host, port)
        self.host, self.port = host, port
        self._addrs = []
        if self.state != State.DISCONNECTED:
            self.close(KafkaError.of(KafkaError._TRANSPORT, f"broker {self.node_id} moved"),
                       backoff=False)

    # -- connecting -------------------------------------------------------------------------
    def connect(self) -> None:
        s = self.settings
        self.attempts += 1
        self.last_activity = now = time.monotonic()
        self._setup_deadline = now + s.setup_timeout
        self.blocked = None
        self.log.debug("connecting to %s (attempt %d)", self.name, self.attempts,
                       extra={"kafka_event": "connect", "node_id": self.node_id,
                              "host": self.host, "port": self.port, "ts": now})
        try:
            if not self._addrs:
                self._addrs = socket.getaddrinfo(self.host, self.port, s.family,
                                                 socket.SOCK_STREAM)
                self._addr_index = 0
        except OSError as exc:
            self._fail_setup(KafkaError.of(
                KafkaError._RESOLVE, f"{self.name}: failed to resolve {self.host}: {exc}"))
            return
        family, socktype, proto, _, addr = self._addrs[self._addr_index % len(self._addrs)]
        self._addr_index += 1
        try:
            sock = socket.socket(family, socktype, proto)
        except OSError as exc:
            self._fail_setup(KafkaError.of(KafkaError._TRANSPORT, f"{self.name}: socket: {exc}"))
            return
        self.sock = sock
        try:
            sock.setblocking(False)
            if s.nodelay:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if s.keepalive:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if s.send_buffer:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, s.send_buffer)
            if s.receive_buffer:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, s.receive_buffer)
            err = sock.connect_ex(addr)
        except OSError as exc:
            err = exc.errno or errno.EIO
        if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
            self._fail_setup(KafkaError.of(
                KafkaError._TRANSPORT, f"{self.name}: connect failed: {errno.errorcode.get(err, err)}"))
            return
        self.state = State.CONNECTING
        self._events = _WRITE
        self.loop.selector.register(sock, _WRITE, self._on_event)

    def _on_event(self, mask: int) -> None:
        state = self.state
        if state >= State.VERSIONS:
            if mask & _READ:
                self._read()
            if mask & _WRITE and self.sock is not None:
                self._write()
        elif state == State.CONNECTING:
            self._connected()
        elif state == State.TLS:
            self._tls_handshake()

    def _connected(self) -> None:
        sock = self.sock
        assert sock is not None
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            self._fail_setup(KafkaError.of(
                KafkaError._TRANSPORT,
                f"{self.name}: connect failed: {errno.errorcode.get(err, err)}"))
            return
        ctx = self.settings.ssl_context
        if ctx is None:
            self._start_versions()
            return
        self.loop.selector.unregister(sock)
        self._events = 0
        try:
            self.sock = ctx.wrap_socket(sock, server_hostname=self.host,
                                        do_handshake_on_connect=False)
        except (OSError, ValueError) as exc:
            self._fail_setup(KafkaError.of(KafkaError._SSL, f"{self.name}: TLS set-up: {exc}"),
                             terminal=True)
            return
        self.state = State.TLS
        self._tls_handshake()

    def _tls_handshake(self) -> None:
        sock = self.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self._want(_READ)
            return
        except ssl.SSLWantWriteError:
            self._want(_WRITE)
            return
        except ssl.SSLError as exc:
            self._fail_setup(KafkaError.of(
                KafkaError._SSL, f"{self.name}: TLS handshake failed: {exc}"), terminal=True)
            return
        except OSError as exc:
            self._fail_setup(KafkaError.of(
                KafkaError._TRANSPORT, f"{self.name}: TLS handshake failed: {exc}"))
            return
        self._start_versions()

    def _want(self, events: int) -> None:
        if events == self._events:
            return
        selector = self.loop.selector
        sock = self.sock
        assert sock is not None
        if self._events == 0:
            selector.register(sock, events, self._on_event)
        else:
            selector.modify(sock, events, self._on_event)
        self._events = events

    # -- ApiVersions and SASL ---------------------------------------------------------------
    def _start_versions(self) -> None:
        self.state = State.VERSIONS
        self._reader = FrameReader(self._owns_buffer, self.pool,
                                   max_frame=self.settings.max_response_bytes)
        self._want(_READ)
        if not self.settings.api_version_request:
            self._versions_done({k: (low, low) for k, (low, _) in API_VERSIONS.items()})
            return
        self._send_api_versions(API_VERSIONS[_API_VERSIONS][1])

    def _send_api_versions(self, version: int) -> None:
        s = self.settings
        message = ApiVersionsRequest(client_software_name=s.software_name,
                                     client_software_version=s.software_version)
        self._send_internal(message, version, self._on_api_versions)

    def _on_api_versions(self, req: Request, body: Any) -> None:
        if isinstance(body, BaseException):
            return
        resp = _decode_or_none(ApiVersionsResponse, body, req.version)
        if resp is not None and resp.error_code == 0:
            self._versions_done({e.api_key: (e.min_version, e.max_version)
                                 for e in resp.api_keys}, resp.api_keys)
            return
        # The error code leads the body at every version.
        code = _I16.unpack_from(body, 0)[0] if len(body) >= 2 else -1
        if code not in (_UNSUPPORTED_VERSION, 0) or req.version == 0:
            reason = (f"ApiVersions failed: {KafkaError.of(code).str()}" if resp is not None
                      else "unreadable ApiVersions reply")
            self.close(KafkaError.of(KafkaError._TRANSPORT, f"{self.name}: {reason}"))
            return
        # A broker that does not know our version answers with (at least) its own range
        # for ApiVersions, usually in the v0 layout; without a readable one, use v0.
        retry = 0
        for parsed in (resp, _decode_or_none(ApiVersionsResponse, body, 0)):
            if parsed is not None:
                for entry in parsed.api_keys:
                    if entry.api_key == _API_VERSIONS and entry.max_version < req.version:
                        retry = max(retry, entry.max_version)
        self.log.debug("%s: ApiVersions v%d not supported, retrying with v%d",
                       self.name, req.version, retry)
        self._send_api_versions(retry)

    def _versions_done(self, ranges: dict[int, tuple[int, int]], entries=None) -> None:
        self.broker_ranges = ranges
        if entries is None:
            self.versions = {k: lo for k, (lo, _) in ranges.items()}
        else:
            self.versions = negotiate(entries, API_VERSIONS)
        if self.settings.sasl:
            self._start_sasl()
        else:
            self._set_ready()

    def _auth_failed(self, reason: str) -> None:
        self.close(KafkaError.of(KafkaError._AUTHENTICATION, f"{self.name}: {reason}"),
                   terminal=True)

    def _start_sasl(self) -> None:
        self.state = State.AUTH
        tokens = self.settings.oauth_tokens
        if tokens is not None and tokens.blocking:
            # oauth_cb or a token endpoint: fetched on a worker thread while this connection
            # waits (the I/O thread goes on with other connections and timers).
            sock, loop = self.sock, self.loop
            tokens.token_async(lambda result: loop.call_soon(
                lambda: self._token_ready(sock, result)))
            return
        self._begin_sasl(None)

    def _token_ready(self, sock: socket.socket | None, result: TokenResult) -> None:
        if self.sock is not sock or sock is None or self.state != State.AUTH:
            return  # closed (or reconnected) meanwhile
        if isinstance(result, BaseException):
            self._auth_failed(f"Failed to acquire SASL OAUTHBEARER token: {result}")
            return
        self._begin_sasl(result)

    def _begin_sasl(self, token: OAuthToken | None) -> None:
        try:
            self._sasl = make_mechanism(self.settings.config, self.settings.oauth_tokens, token,
                                         self.host)
        except SaslError as exc:
            self._auth_failed(str(exc))
            return
        if self.versions.get(SaslHandshakeRequest.API_KEY, -1) < 1 or \
                SaslAuthenticateRequest.API_KEY not in self.versions:
            self._auth_failed("broker does not support SaslHandshake v1 and SaslAuthenticate")
            return
        self._send_internal(SaslHandshakeRequest(mechanism=self._sasl.name), 1,
                            self._on_sasl_handshake)

    def _on_sasl_handshake(self, req: Request, body: Any) -> None:
        if isinstance(body, BaseException):
            return
        sasl = self._sasl
        assert sasl is not None
        try:
            resp = SaslHandshakeResponse.decode(body, req.version)
        except ProtocolError as exc:
            self._auth_failed(f"bad SaslHandshake reply: {exc}")
            return
        if resp.error_code:
            self._auth_failed(
                f"SASL mechanism {sasl.name} rejected: {KafkaError.of(resp.error_code).str()}"
                f" (broker enables: {', '.join(resp.mechanisms) or 'none'})")
            return
        try:
            first = sasl.start()
        except SaslError as exc:
            self._auth_failed(str(exc))
            return
        self._send_sasl(first)

    def _send_sasl(self, data: bytes) -> None:
        self._send_internal(SaslAuthenticateRequest(auth_bytes=data),
                            self.versions[SaslAuthenticateRequest.API_KEY], self._on_sasl_auth)

    def _on_sasl_auth(self, req: Request, body: Any) -> None:
        if isinstance(body, BaseException):
            return
        sasl = self._sasl
        assert sasl is not None
        try:
            resp = SaslAuthenticateResponse.decode(body, req.version)
        except ProtocolError as exc:
            self._auth_failed(f"bad SaslAuthenticate reply: {exc}")
            return
        if resp.error_code:
            self._auth_failed(
                f"SASL {sasl.name} authentication failed: "
                f"{resp.error_message or KafkaError.of(resp.error_code).str()}")
            return
        try:
            nxt = sasl.step(resp.auth_bytes or b"")
        except SaslError as exc:
            self._auth_failed(str(exc))
            return
        if nxt is None:
            self._authenticated(req.version or 0, resp)
        else:
            self._send_sasl(nxt)

    def _authenticated(self, version: int, resp: Any) -> None:
        lifetime = resp.session_lifetime_ms if version >= 1 else 0
        self.log.debug("%s: %s as %s, session lifetime %d ms", self.name,
                       "re-authenticated" if self._reauthenticating else "authenticated",
                       self.settings.config["sasl.mechanism"], lifetime,
                       extra={"kafka_event": ("reauthenticated" if self._reauthenticating
                                              else "authenticated"),
                              "node_id": self.node_id, "session_lifetime_ms": lifetime})
        if lifetime and lifetime > 0:
            sock = self.sock
            self._reauth_timer = self.loop.call_later(
                random.uniform(*REAUTH_WINDOW) * lifetime / 1000.0,
                lambda: self._reauth_time(sock))
        if self._reauthenticating:
            self._reauthenticating = False
            self.reauthentications += 1
            self.state = State.READY
            self._sasl = None
            self.pump()
            return
        self._set_ready()

    # -- re-authentication (KIP-368) --------------------------------------------------------
    def _reauth_time(self, sock: socket.socket | None) -> None:
        self._reauth_timer = None
        if self.sock is not sock or self.state != State.READY:
            return
        self._reauth_due = True
        self._maybe_reauth()

    def _maybe_reauth(self) -> None:
        """Re-authenticate once the responses in flight are in (nothing new goes out)."""
        if not self._reauth_due or self.inflight or self.state != State.READY:
            return
        self._reauth_due = False
        self._reauthenticating = True
        self._setup_deadline = time.monotonic() + self.settings.setup_timeout
        self._start_sasl()

    def _set_ready(self) -> None:
        self.state = State.READY
        self._sasl = None
        self.backoff.reset()
        self.last_failed = False
        self.blocked = None
        self.last_activity = time.monotonic()
        self.log.debug("connected to %s", self.name,
                       extra={"kafka_event": "ready", "node_id": self.node_id,
                              "ts": self.last_activity})
        self.listener.connection_ready(self)
        self.pump()

    # -- sending ----------------------------------------------------------------------------
    def _next_corr(self) -> int:
        self._corr = (self._corr + 1) & 0x7FFFFFFF
        return self._corr

    def _send_internal(self, message: Any, version: int, handler) -> None:
        req = Request(message, version, None, self._setup_deadline, self.node_id, handler=handler)
        corr = self._next_corr()
        chunks = frame_request(message, version, corr, self.settings.client_id)
        req.sent_at = time.monotonic()
        self.counters.request_sent(_I32.unpack_from(chunks[0], 0)[0] + 4)
        self.inflight[corr] = req
        self._writer.push(chunks)
        self._write()

    def pump(self) -> None:
        """Move queued requests into the window while there is room."""
        if self.state != State.READY or self._reauth_due:
            return
        pending = self.pending
        inflight = self.inflight
        limit = self.settings.max_in_flight
        now = 0.0
        if self.throttled_until:
            now = time.monotonic()
            if now < self.throttled_until:
                if self._throttle_timer is None:
                    self._throttle_timer = self.loop.call_later(
                        self.throttled_until - now, self._throttle_over)
                return
            self.throttled_until = 0.0
        queued = False
        counters = self.counters
        while pending and len(inflight) < limit:
            req = pending.popleft()
            if not req.start():
                continue
            try:
                version = choose(self.versions, self.broker_ranges, req.message, req.version,
                                 self.name)
                req.version = version
                message = req.message
                if message.__class__ is VersionedRequest:
                    message = message.build(version)
                corr = self._next_corr()
                chunks = frame_request(message, version, corr, self.settings.client_id)
            except KafkaException as exc:
                req.fail(exc)
                continue
            except Exception as exc:  # bad request contents
                req.fail(KafkaException(KafkaError.of(
                    KafkaError._INVALID_ARG, f"cannot encode {req.message.NAME}: {exc}")))
                continue
            req.sent_at = time.monotonic()
            counters.request_sent(_I32.unpack_from(chunks[0], 0)[0] + 4)
            if req.expect_response:
                inflight[corr] = req
                self._writer.push(chunks)
            else:
                self._writer.push(chunks, req)
            queued = True
        if queued:
            self._write()

    def _throttle_over(self) -> None:
        self._throttle_timer = None
        self.pump()

    def _written(self, req: Request) -> None:
        """A request that expects no response has been fully written."""
        req.resolve(None)

    def _write(self) -> None:
        sock = self.sock
        if sock is None:
            return
        try:
            done = self._writer.flush(sock, self.lock_policy.nogil_bytes)
        except OSError as exc:
            self.close(KafkaError.of(KafkaError._TRANSPORT, f"{self.name}: send failed: {exc}"))
            return
        self.last_activity = time.monotonic()
        self._want(_READ if done else _READ | _WRITE)

    # -- receiving --------------------------------------------------------------------------
    def _owns_buffer(self, corr: int) -> bool:
        req = self.inflight.get(corr)
        return req is not None and owns_buffer(req.api_key)

    def _read(self) -> None:
        reader = self._reader
        assert reader is not None
        tls = self.settings.ssl_context is not None
        while self.sock is not None:
            try:
                reader.fill(self.sock, self.lock_policy.nogil_bytes)
            except (BlockingIOError, InterruptedError, ssl.SSLWantReadError,
                    ssl.SSLWantWriteError):
                break
            except ConnectionClosed:
                self._closed_by_peer()
                return
            except (OSError, ProtocolError) as exc:
                self.close(KafkaError.of(KafkaError._TRANSPORT, f"{self.name}: receive failed: {exc}"))
                return
            try:
                for frame in reader.frames():
                    self._handle_frame(frame)
                    if self.sock is None:
                        return
            except Exception as exc:  # never leave requests unsettled
                self.close(KafkaError.of(KafkaError._TRANSPORT, f"{self.name}: {exc}"))
                return
            if not tls:
                break
        self.last_activity = time.monotonic()
        if self._reauth_due:
            self._maybe_reauth()
        if self.pending:
            self.pump()

    def _closed_by_peer(self) -> None:
        if self.state == State.AUTH:
            self._auth_failed("broker closed the connection during SASL "
                              + ("re-authentication" if self._reauthenticating
                                 else "authentication (wrong credentials or mechanism?)"))
        else:
            self.close(KafkaError.of(KafkaError._TRANSPORT, f"{self.name}: connection closed by broker"))

    def _handle_frame(self, frame: memoryview) -> None:
        """Settle the request ``frame`` answers. A frame that cannot be read (unknown
        correlation id, malformed header or body) fails the connection and with it every
        request in flight on it, this one included: each ends in an error or a retry."""
        corr = _I32.unpack_from(frame, 0)[0]
        req = self.inflight.get(corr)
        if req is None:
            self.close(KafkaError.of(
                KafkaError._TRANSPORT,
                f"{self.name}: response correlation id {corr} matches no request in flight"))
            return
        self.counters.response_received(len(frame) + 4, time.monotonic() - req.sent_at)
        api_key = req.api_key
        version = req.version
        assert version is not None
        try:
            if api_key == _API_VERSIONS:
                offset = 4  # ApiVersions responses always use header v0
            else:
                offset = decode_response_header(frame, response_header_version(api_key,
                                                                               version))[1]
            body = frame[offset:]
            if req.handler is not None:
                del self.inflight[corr]
                req.handler(req, body)
                return
            message = req.message
            if message.__class__ is VersionedRequest and message.decode_response is not None:
                resp = message.decode_response(body, version)
            else:
                resp = API_KEYS[api_key][1].decode(body, version)
        except Exception as exc:  # any malformed reply fails the connection
            if self.sock is not None:
                self._malformed(req, version, exc)
            return
        del self.inflight[corr]
        fut = req.future
        if fut is not None:
            fut.api_version = version
        req.resolve(resp)
        throttle = getattr(resp, "throttle_time_ms", 0)
        if throttle and throttle > 0:
            self.throttled_until = time.monotonic() + throttle / 1000.0
            self.counters.throttled(throttle)
            self.listener.throttled(self, throttle)

    def _malformed(self, req: Request, version: int | None, exc: BaseException) -> None:
        name = getattr(req.message, "NAME", req.api_key)
        self.close(KafkaError.of(
            KafkaError._TRANSPORT,
            f"{self.name}: malformed {name} v{version} response "
            f"({type(exc).__name__}: {exc})"))

    # -- timeouts and closing ---------------------------------------------------------------
    def has_deadlines(self) -> bool:
        """Whether a deadline may pass soon: requests queued or in flight, or set-up under
        way (else only ``connections.max.idle.ms`` is left to check)."""
        return bool(self.pending or self.inflight
                    or State.DISCONNECTED < self.state < State.READY)

    def check_timeouts(self, now: float) -> None:
        state = self.state
        if State.DISCONNECTED < state < State.READY and now >= self._setup_deadline:
            self.close(KafkaError.of(
                KafkaError._TRANSPORT,
                f"{self.name}: connection set-up timed out after "
                f"{self.settings.setup_timeout * 1000:.0f} ms (in state {state.name})"))
            return
        if self.pending:
            expired = [r for r in self.pending if r.deadline <= now]
            if expired:
                for r in expired:
                    self.pending.remove(r)
                    r.fail(kafka_exception(KafkaError._TIMED_OUT,
                                           f"{self.name}: request timed out in queue"))
        if state == State.READY and self.inflight:
            # Every request in flight, not only the oldest: a later one may have a shorter
            # timeout (its own ``timeout_ms``) than one sent before it.
            late = [(c, r) for c, r in self.inflight.items() if r.deadline <= now]
            if late:
                for corr, r in late:
                    del self.inflight[corr]
                    r.fail(kafka_exception(
                        KafkaError._TIMED_OUT,
                        f"{self.name}: {r.message.NAME} timed out waiting for a response"))
                self.close(KafkaError.of(KafkaError._TRANSPORT,
                                      f"{self.name}: closing after a request timed out"),
                           backoff=False)
                return
        if (state == State.READY and not self.inflight and not self.pending
                and not self._writer.pending):
            idle = self.settings.idle_timeout
            if (idle and now - self.last_activity >= idle) or self.retire_when_idle:
                self.log.debug("closing idle connection to %s", self.name)
                self.close(None)

    def _fail_setup(self, error: KafkaError, terminal: bool = False) -> None:
        if self.state == State.DISCONNECTED and self.sock is None:
            # Nothing was opened yet (the name did not resolve, no socket could be made): this
            # attempt still fails as a connection does - backoff, waiting requests, error_cb.
            self.state = State.CONNECTING
        self.close(error, terminal=terminal)

    def close(self, error: KafkaError | None, *, terminal: bool = False,
              backoff: bool = True) -> None:
        """Close the socket and fail everything outstanding with ``error``.

        ``error`` None is a quiet close (idle or shutdown) with nothing outstanding.
        ``terminal`` errors (authentication, TLS) also fail new requests at once until the
        next attempt is due.
        """
        if self.state == State.DISCONNECTED and self.sock is None:
            return
        was_ready = self.state == State.READY
        sock = self.sock
        self.sock = None
        self.state = State.DISCONNECTED
        if sock is not None:
            if self._events:
                try:
                    self.loop.selector.unregister(sock)
                except (KeyError, ValueError):  # not registered (any more): nothing to undo
                    pass
            try:
                sock.close()
            except OSError as exc:
                self.log.debug("%s: closing the socket failed: %s", self.name, exc)
        self._events = 0
        self._reader = None
        self._sasl = None
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        self._reauth_due = self._reauthenticating = False
        self.versions = {}
        self.throttled_until = 0.0
        unwritten = self._writer.clear()
        inflight = list(self.inflight.values())
        self.inflight.clear()
        pending = list(self.pending)
        self.pending.clear()
        now = time.monotonic()
        if error is not None:
            self.last_failed = True
            if backoff or not was_ready:
                delay = self.backoff.next_delay()
                if terminal:
                    delay = max(delay, self.backoff.maximum)
                self.next_attempt = now + delay
            if terminal:
                self.blocked = error
            self.log.debug("%s: %s", self.name, error.str(),
                           extra={"kafka_event": "closed", "node_id": self.node_id,
                                  "error": error, "ts": now})
        failure = KafkaException(error if error is not None else KafkaError.of(
            KafkaError._DESTROY, f"{self.name}: connection closed"))
        for req in inflight:
            req.fail(failure)
        for req in unwritten:
            req.fail(failure)
        for req in pending:
            if req.any_node and not terminal and self.listener.reroute(req, self):
                continue
            req.fail(failure)
        self.listener.connection_down(self, error, was_ready, terminal)
