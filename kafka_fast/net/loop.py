"""The I/O thread: a selector loop with callbacks, timers and per-iteration poll hooks."""

from __future__ import annotations

import heapq
import itertools
import logging
import selectors
import socket
import threading
import time
from collections import deque
from collections.abc import Callable

from .._impl import load

log = logging.getLogger("kafka_fast.net")
# Wake-up bytes go through the calls that keep the interpreter lock (see net/framing.py): an
# application thread that wakes the loop from produce() must not wait a switch interval for it.
_sockio, _ = load("_sockio", "sockio")
_WAKEUP = (b"\0",)

#: Longest the selector sleeps when nothing is scheduled.
MAX_WAIT = 1.0


class TimerHandle:
    """A scheduled call; ``cancel()`` stops it if it has not run yet."""

    __slots__ = ("when", "fn", "cancelled")

    def __init__(self, when: float, fn: Callable[[], object]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class IOLoop:
    """One thread running ``selector.select`` plus everything scheduled onto it.

    Each iteration: socket events, queued callbacks, due timers, then poll hooks. A poll hook
    may return a number of seconds: the loop then waits at most that long before the next
    iteration. Exceptions raised by callbacks are logged and never stop the loop.
    """

    def __init__(self, name: str = "kafka_fast-io", logger: logging.Logger | None = None) -> None:
        self.name = name
        self.log = logger or log
        self.selector = selectors.DefaultSelector()
        self._callbacks: deque[Callable[[], object]] = deque()
        self._timers: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._hooks: list[Callable[[], object]] = []
        self._ticks: list[Callable[[], object]] = []
        self._rsock, self._wsock = socket.socketpair()
        self._rsock.setblocking(False)
        self._wsock.setblocking(False)
        self._woken = False
        self._drain_buf = bytearray(4096)
        self.selector.register(self._rsock, selectors.EVENT_READ, self._drain_wakeup)
        self._thread: threading.Thread | None = None
        self._thread_id: int | None = None
        self._stopping = False
        self._closed = False
        self._lock = threading.Lock()
        #: Called with any exception a callback, timer, hook or socket handler raised (after
        #: logging it), so that it reaches the application instead of only the log.
        self.on_error: Callable[[BaseException], object] | None = None

    # -- thread control -------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread_id

    def stop(self, timeout: float | None = None) -> bool:
        """Ask the loop to finish its iteration and exit; wait up to ``timeout``.

        Returns True when the thread has ended (or never started).
        """
        self._stopping = True
        self.wakeup()
        thread = self._thread
        if thread is None or self.in_loop_thread():
            if thread is None:
                self._dispose()
            return thread is None
        thread.join(timeout)
        return not thread.is_alive()

    def _dispose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.selector.unregister(self._rsock)
        except (KeyError, ValueError):
            pass
        self._rsock.close()
        self._wsock.close()
        self.selector.close()

    # -- scheduling (thread-safe) ---------------------------------------------------------
    def wakeup(self) -> None:
        """Interrupt the selector wait (cheap when a wakeup is already pending)."""
        if self._woken or self.in_loop_thread():
            return
        self._woken = True
        try:
            _sockio.send_chunks(self._wsock, _WAKEUP)  # -1 (full): a wakeup is pending anyway
        except OSError:
            pass

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` on the I/O thread at the next iteration."""
        self._callbacks.append(fn)
        self.wakeup()

    def call_later(self, delay: float, fn: Callable[[], object]) -> TimerHandle:
        """Run ``fn()`` on the I/O thread after ``delay`` seconds."""
        handle = TimerHandle(time.monotonic() + max(0.0, delay), fn)
        if self.in_loop_thread():
            heapq.heappush(self._timers, (handle.when, next(self._seq), handle))
        else:
            self.call_soon(lambda: heapq.heappush(
                self._timers, (handle.when, next(self._seq), handle)))
        return handle

    def add_poll_hook(self, fn: Callable[[], object]) -> None:
        """Call ``fn()`` on every iteration (after I/O and timers)."""
        self._hooks = [*self._hooks, fn]
        self.wakeup()

    def remove_poll_hook(self, fn: Callable[[], object]) -> None:
        # Equality, not identity: each ``obj.method`` access makes a new bound method.
        self._hooks = [h for h in self._hooks if h != fn]

    def add_tick(self, fn: Callable[[], object]) -> None:
        """Internal per-iteration work, run after each phase of the iteration."""
        self._ticks = [*self._ticks, fn]

    # -- the loop ---------------------------------------------------------------------------
    def _drain_wakeup(self, mask: int) -> None:
        try:
            while _sockio.recv_into(self._rsock, self._drain_buf, 0, 4096) > 0:
                pass
        except OSError:
            pass
        self._woken = False

    def _safe(self, fn: Callable[[], object]) -> object:
        try:
            return fn()
        except Exception as exc:  # the I/O thread must survive any callback
            self.log.exception("error in I/O thread callback %r", fn)
            self._report(exc)
            return None

    def _report(self, exc: BaseException) -> None:
        on_error = self.on_error
        if on_error is not None:
            try:
                on_error(exc)
            except Exception:  # reporting must not stop the loop
                self.log.exception("error reporting an I/O thread error")

    def _run_ticks(self) -> None:
        for tick in self._ticks:
            self._safe(tick)

    def _run(self) -> None:
        self._thread_id = threading.get_ident()
        wait = 0.0
        try:
            while not self._stopping:
                if self._callbacks:
                    wait = 0.0
                elif self._timers:
                    wait = min(wait, max(0.0, self._timers[0][0] - time.monotonic()))
                for key, mask in self.selector.select(wait):
                    try:
                        key.data(mask)
                    except Exception as exc:  # the I/O thread must survive
                        self.log.exception("error handling socket event")
                        self._report(exc)
                self._run_ticks()
                for _ in range(len(self._callbacks)):
                    self._safe(self._callbacks.popleft())
                now = time.monotonic()
                timers = self._timers
                while timers and timers[0][0] <= now:
                    handle = heapq.heappop(timers)[2]
                    if not handle.cancelled:
                        self._safe(handle.fn)
                self._run_ticks()
                wait = MAX_WAIT
                for hook in self._hooks:
                    result = self._safe(hook)
                    if isinstance(result, (int, float)) and result < wait:
                        wait = max(0.0, float(result))
                self._run_ticks()
        finally:
            while self._callbacks:
                self._safe(self._callbacks.popleft())
            self._dispose()
