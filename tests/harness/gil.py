"""Tells whether a call gives up the interpreter lock (GIL)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

#: The switch interval while measuring: a call that gives the GIL up waits about this long
#: to get it back from the busy thread.
PROBE_INTERVAL = 1.0


def seconds_beside_a_busy_thread(fn: Callable[[], object], calls: int) -> float:
    """Seconds ``calls`` calls of ``fn`` take while another thread runs Python code, with a
    1 s switch interval: near zero when ``fn`` keeps the GIL, about a second per call when
    it gives the GIL up."""
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            pass

    before = sys.getswitchinterval()
    sys.setswitchinterval(PROBE_INTERVAL)
    spinner = threading.Thread(target=spin, daemon=True)
    try:
        spinner.start()
        time.sleep(0.01)  # the spinner now holds the GIL until it is asked for it
        start = time.monotonic()
        for _ in range(calls):
            fn()
        return time.monotonic() - start
    finally:
        stop.set()
        sys.setswitchinterval(before)
        spinner.join()
