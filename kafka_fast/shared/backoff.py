"""Exponential backoff with jitter (the Java client's formula)."""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """``base * 2**failures`` times a random factor in 1 +- ``jitter``, never above ``maximum``.

    Times are in seconds. ``next_delay()`` returns the delay for the current failure count
    and then counts one more failure; ``reset()`` starts over after a success.
    """

    __slots__ = ("base", "maximum", "jitter", "failures", "_random")

    def __init__(self, base_ms: float, max_ms: float, jitter: float = 0.2,
                 rng: Callable[[], float] = random.random) -> None:
        self.base = max(0.0, base_ms) / 1000.0
        self.maximum = max(self.base, max_ms / 1000.0)
        self.jitter = jitter
        self.failures = 0
        self._random = rng

    def peek(self) -> float:
        """The delay the next failure would get, before jitter."""
        if self.base == 0.0:
            return 0.0
        return min(self.maximum, self.base * (2.0 ** min(self.failures, 62)))

    def next_delay(self) -> float:
        """Delay before the next attempt; counts one more failure."""
        delay = self.peek()
        self.failures += 1
        if self.jitter:
            delay *= 1.0 + self.jitter * (2.0 * self._random() - 1.0)
        return min(delay, self.maximum)

    def reset(self) -> None:
        self.failures = 0
