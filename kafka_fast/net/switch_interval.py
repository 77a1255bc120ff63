"""The interpreter's thread switch interval while clients that ask for a shorter one are open.

CPython hands the interpreter lock to a thread waiting for it only after the running thread
has held it for ``sys.getswitchinterval()`` (5 ms by default). A producer's I/O thread gives the
lock up at every socket call and, while the application thread produces in a loop, waits that
long each time to get it back: the I/O thread falls behind and records pile up until
``flush()``. A client asks for a shorter interval (``python.switch.interval.ms``) while it is
open; the interpreter runs with the shortest interval asked for, and the interval found before
the first request is put back when the last one is released.
"""

from __future__ import annotations

import itertools
import sys
import threading

_lock = threading.RLock()  # release() may run from a finalizer during request()
_tokens = itertools.count(1)
_requests: dict[int, float] = {}
_saved: float | None = None


def request(seconds: float) -> int | None:
    """Ask for an interval of at most ``seconds`` (<= 0: no request); returns the token to
    ``release``, or None when nothing was asked."""
    global _saved
    if seconds <= 0:
        return None
    with _lock:
        if not _requests:
            _saved = sys.getswitchinterval()
        token = next(_tokens)
        _requests[token] = seconds
        _apply()
    return token


def release(token: int | None) -> None:
    """Withdraw the request ``token`` (None and unknown tokens are ignored)."""
    global _saved
    if token is None:
        return
    with _lock:
        if _requests.pop(token, None) is None:
            return
        if _requests:
            _apply()
        elif _saved is not None:
            sys.setswitchinterval(_saved)
            _saved = None


def _apply() -> None:
    assert _saved is not None
    sys.setswitchinterval(min(_saved, *_requests.values()))
