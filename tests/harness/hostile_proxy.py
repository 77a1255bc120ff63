"""A hostile TCP proxy in front of a real broker: it damages chosen responses on purpose.

``HostileProxy(upstreams)`` listens on one loopback port per upstream broker address and
relays Kafka frames both ways. Metadata and FindCoordinator answers are rewritten so that
every advertised broker address the proxy fronts points at its proxy port: clients keep
going through it. ``inject(api_key, kind, count)`` damages the next ``count`` responses of
that API (any connection) in one of these ways:

- ``corrupt``: the correlation id is kept, every byte after it is garbage;
- ``truncate``: the frame is cut to the correlation id plus one byte (a truncated header);
- ``cut``: half the frame is sent, then both connections are closed;
- ``stall``: the response is swallowed (the connection stays open and silent);
- ``duplicate``: the response is sent twice;
- ``misnumber``: the response carries a correlation id no request has;
- ``oversize``: a size prefix of 1 GiB, then silence on that connection;
- ``rebootstrap``: a Metadata response (v13+) becomes the broker's top-level
  REBOOTSTRAP_REQUIRED answer (no brokers, no topics; KIP-1102).

``capture`` names API keys whose request frames are kept whole in ``captured`` as
``(api_key, version, frame)``, as the client wrote them.

``applied`` counts the damage done per ``(api_key, kind)`` so that tests can check the
fault really happened. Runs one selector thread; ``close()`` stops it.
"""

from __future__ import annotations

import collections
import selectors
import socket
import struct
import threading
from collections.abc import Iterable

from kafka_fast.protocol.headers import decode_response_header, response_header_version
from kafka_fast.protocol.messages import FindCoordinatorResponse, MetadataResponse

KINDS = ("corrupt", "truncate", "cut", "stall", "duplicate", "misnumber", "oversize",
         "rebootstrap")
REBOOTSTRAP_REQUIRED = 129
METADATA = 3
FIND_COORDINATOR = 10
_SIZE = struct.Struct(">i")
_REQUEST = struct.Struct(">hhi")
_GARBAGE = b"\xde\xad\xbe\xef"
_HOST = "127.0.0.1"


class _Side:
    """One socket of a relayed connection: bytes received but not parsed, bytes to send."""

    __slots__ = ("sock", "inbox", "outbox")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = bytearray()
        self.outbox = bytearray()


class _Pipe:
    """A client connection and its upstream connection."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = _Side(client)
        self.upstream = _Side(upstream)
        self.requests: dict[int, tuple[int, int]] = {}  # correlation id -> (api key, version)
        self.silenced = False
        self.closed = False


class HostileProxy:
    """Relays to ``upstreams`` (``(host, port)`` pairs); ``.bootstrap`` is the first's proxy.
    It listens on ``host`` (an IPv4 or IPv6 address) and advertises ``advertise`` (a name;
    ``host`` unless given) in the answers it rewrites."""

    def __init__(self, upstreams: Iterable[tuple[str, int]], host: str = _HOST,
                 advertise: str | None = None) -> None:
        self._advertise = advertise or host
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._faults: dict[int, collections.deque[str]] = collections.defaultdict(
            collections.deque)
        self.applied: collections.Counter[tuple[int, int | str]] = collections.Counter()
        self.responses: collections.Counter[int] = collections.Counter()
        self.largest_frame = 0
        self.capture: set[int] = set()
        self.captured: list[tuple[int, int, bytes]] = []
        self.port_of: dict[tuple[str, int], int] = {}
        self._listeners: list[socket.socket] = []
        self._pipes: set[_Pipe] = set()
        for host, port in upstreams:
            lsock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET,
                                  socket.SOCK_STREAM)
            lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            lsock.bind((host, 0))
            lsock.listen(64)
            lsock.setblocking(False)
            self.port_of[(host, int(port))] = lsock.getsockname()[1]
            self._listeners.append(lsock)
            self._selector.register(lsock, selectors.EVENT_READ, ("accept", (host, int(port))))
        self.bootstrap = f"{self._advertise}:{self._listeners[0].getsockname()[1]}"
        self._rsock, self._wsock = socket.socketpair()
        self._rsock.setblocking(False)
        self._selector.register(self._rsock, selectors.EVENT_READ, ("wake", None))
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="hostile-proxy", daemon=True)
        self._thread.start()

    # -- control (any thread) ---------------------------------------------------------------
    def inject(self, api_key: int, kind: str, count: int = 1) -> None:
        """Damage the next ``count`` responses to ``api_key`` requests with ``kind``."""
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r} (one of {', '.join(KINDS)})")
        with self._lock:
            self._faults[api_key].extend([kind] * count)

    def pending(self, api_key: int) -> int:
        """Faults injected for ``api_key`` that have not hit a response yet."""
        with self._lock:
            return len(self._faults[api_key])

    def clear(self) -> None:
        """Forget faults not applied yet."""
        with self._lock:
            self._faults.clear()

    def close(self) -> None:
        self._stopping = True
        self._wake()
        self._thread.join(10)

    def __enter__(self) -> HostileProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the relay thread -------------------------------------------------------------------
    def _wake(self) -> None:
        try:
            self._wsock.send(b"\0")
        except OSError:
            pass

    def _run(self) -> None:
        try:
            while not self._stopping:
                for key, mask in self._selector.select(0.5):
                    what, data = key.data
                    if what == "accept":
                        self._accept(key.fileobj, data)
                    elif what == "wake":
                        try:
                            self._rsock.recv(4096)
                        except OSError:
                            pass
                    else:
                        pipe, side = data
                        if not pipe.closed:
                            self._on_event(pipe, side, mask)
        finally:
            for pipe in list(self._pipes):
                self._close(pipe)
            for lsock in self._listeners:
                self._selector.unregister(lsock)
                lsock.close()
            self._selector.close()
            self._rsock.close()
            self._wsock.close()

    def _accept(self, lsock: socket.socket, upstream_addr: tuple[str, int]) -> None:
        try:
            client, _ = lsock.accept()
        except OSError:
            return
        try:
            upstream = socket.create_connection(upstream_addr, timeout=5)
        except OSError:
            client.close()
            return
        for s in (client, upstream):
            s.setblocking(False)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pipe = _Pipe(client, upstream)
        self._pipes.add(pipe)
        self._selector.register(client, selectors.EVENT_READ, ("pipe", (pipe, "client")))
        self._selector.register(upstream, selectors.EVENT_READ, ("pipe", (pipe, "upstream")))

    def _on_event(self, pipe: _Pipe, which: str, mask: int) -> None:
        side = pipe.client if which == "client" else pipe.upstream
        if mask & selectors.EVENT_WRITE:
            self._flush(pipe, side)
        if pipe.closed or not mask & selectors.EVENT_READ:
            return
        try:
            data = side.sock.recv(256 * 1024)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(pipe)
            return
        side.inbox += data
        if which == "client":
            self._relay_requests(pipe)
        else:
            self._relay_responses(pipe)

    def _relay_requests(self, pipe: _Pipe) -> None:
        inbox = pipe.client.inbox
        out = bytearray()
        while len(inbox) >= 4:
            size = _SIZE.unpack_from(inbox, 0)[0]
            if len(inbox) < 4 + size:
                break
            if size >= 8:
                api_key, version, corr = _REQUEST.unpack_from(inbox, 4)
                pipe.requests[corr] = (api_key, version)
                if api_key in self.capture:
                    with self._lock:
                        self.captured.append((api_key, version, bytes(inbox[4:4 + size])))
            out += inbox[:4 + size]
            del inbox[:4 + size]
        if out:
            self._send(pipe, pipe.upstream, bytes(out))

    def _relay_responses(self, pipe: _Pipe) -> None:
        inbox = pipe.upstream.inbox
        while len(inbox) >= 4 and not pipe.closed:
            size = _SIZE.unpack_from(inbox, 0)[0]
            if len(inbox) < 4 + size:
                break
            frame = bytes(inbox[4:4 + size])
            del inbox[:4 + size]
            if pipe.silenced:
                continue
            corr = _SIZE.unpack_from(frame, 0)[0]
            api_key, version = pipe.requests.pop(corr, (-1, -1))
            if api_key in (METADATA, FIND_COORDINATOR):
                frame = self._rewrite(frame, api_key, version)
            self.responses[api_key] += 1
            self.largest_frame = max(self.largest_frame, len(frame))
            with self._lock:
                faults = self._faults.get(api_key)
                kind = faults.popleft() if faults else None
            if kind is None:
                self._send(pipe, pipe.client, _SIZE.pack(len(frame)) + frame)
                continue
            self.applied[(api_key, kind)] += 1
            if kind == "rebootstrap":
                self._send(pipe, pipe.client, self._rebootstrap_required(frame, version))
                continue
            self._damage(pipe, frame, kind)

    def _damage(self, pipe: _Pipe, frame: bytes, kind: str) -> None:
        head = frame[:4]
        if kind == "corrupt":
            rest = len(frame) - 4
            bad = (_GARBAGE * (rest // 4 + 1))[:rest]
            self._send(pipe, pipe.client, _SIZE.pack(len(frame)) + head + bad)
        elif kind == "truncate":
            short = frame[:5]
            self._send(pipe, pipe.client, _SIZE.pack(len(short)) + short)
        elif kind == "cut":
            self._send(pipe, pipe.client, _SIZE.pack(len(frame)) + frame[:len(frame) // 2])
            self._flush(pipe, pipe.client)
            self._close(pipe)
        elif kind == "stall":
            pass
        elif kind == "duplicate":
            whole = _SIZE.pack(len(frame)) + frame
            self._send(pipe, pipe.client, whole + whole)
        elif kind == "misnumber":
            corr = _SIZE.unpack_from(frame, 0)[0]
            wrong = _SIZE.pack((corr + 0x10000) & 0x7FFFFFFF)
            self._send(pipe, pipe.client, _SIZE.pack(len(frame)) + wrong + frame[4:])
        elif kind == "oversize":
            self._send(pipe, pipe.client, _SIZE.pack(1 << 30) + frame)
            pipe.silenced = True

    def _rewrite(self, frame: bytes, api_key: int, version: int) -> bytes:
        """Point advertised addresses of fronted brokers at their proxy ports."""
        try:
            offset = decode_response_header(frame, response_header_version(api_key, version))[1]
            cls = MetadataResponse if api_key == METADATA else FindCoordinatorResponse
            resp = cls.decode(memoryview(frame)[offset:], version)
        except Exception:  # relay what cannot be read as it is
            return frame
        changed = False
        if api_key == METADATA:
            nodes = list(resp.brokers or ())
        else:
            nodes = [resp, *(resp.coordinators or ())]
        for node in nodes:
            port = self.port_of.get((getattr(node, "host", None), getattr(node, "port", None)))
            if port is not None:
                node.host, node.port = self._advertise, port
                changed = True
        if not changed:
            return frame
        return frame[:offset] + resp.encode(version)

    @staticmethod
    def _rebootstrap_required(frame: bytes, version: int) -> bytes:
        """The size-prefixed Metadata ``frame`` turned into a REBOOTSTRAP_REQUIRED answer."""
        offset = decode_response_header(frame, response_header_version(METADATA, version))[1]
        resp = MetadataResponse.decode(memoryview(frame)[offset:], version)
        resp.error_code = REBOOTSTRAP_REQUIRED
        resp.brokers = []
        resp.topics = []
        body = frame[:offset] + resp.encode(version)
        return _SIZE.pack(len(body)) + body

    def _send(self, pipe: _Pipe, side: _Side, data: bytes) -> None:
        side.outbox += data
        self._flush(pipe, side)

    def _flush(self, pipe: _Pipe, side: _Side) -> None:
        if pipe.closed:
            return
        while side.outbox:
            try:
                n = side.sock.send(side.outbox)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self._close(pipe)
                return
            del side.outbox[:n]
        which = "client" if side is pipe.client else "upstream"
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if side.outbox else 0)
        try:
            self._selector.modify(side.sock, events, ("pipe", (pipe, which)))
        except (KeyError, ValueError):
            pass

    def _close(self, pipe: _Pipe) -> None:
        if pipe.closed:
            return
        pipe.closed = True
        self._pipes.discard(pipe)
        for side in (pipe.client, pipe.upstream):
            try:
                self._selector.unregister(side.sock)
            except (KeyError, ValueError):
                pass
            side.sock.close()
