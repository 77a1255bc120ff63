"""How often a client's I/O thread wakes while left alone."""

from __future__ import annotations

import time
from typing import Any


def selects_while_idle(selector: Any, seconds: float, settle: float = 0.3) -> list[Any]:
    """The timeouts of every ``selector.select`` call (one per I/O loop iteration) during
    ``seconds``, after ``settle`` seconds for the checks of the last activity to pass."""
    time.sleep(settle)
    select = selector.select
    calls: list[Any] = []

    def counted(timeout: Any = None) -> Any:
        calls.append(timeout)
        return select(timeout)

    selector.select = counted
    try:
        time.sleep(seconds)
    finally:
        selector.select = select
    return calls
