"""How long a Fetch to each broker may take before it is given up.

A Fetch may take ``request.timeout.ms`` plus ``fetch.wait.max.ms``. A broker that needs longer
to answer (the first read of thousands of partitions whose index pages are not in memory) would
never answer in time: every Fetch would be cut, its connection closed, and the same Fetch sent
again. So after a Fetch to a broker times out, the next one may take twice as long (at most
:data:`MAX_FETCH_TIMEOUT_MS`), and while that broker's answers stay slow the longer allowance is
kept (twice the time the last answer took); it falls back to the configured one once answers are
quick again. I/O thread only.
"""

from __future__ import annotations

#: The longest any Fetch may take (5 minutes), whatever earlier ones took.
MAX_FETCH_TIMEOUT_MS = 300_000


class FetchTimeouts:
    """The timeout of the next Fetch to each broker."""

    def __init__(self, base_ms: int) -> None:
        self.base_ms = base_ms
        self.cap_ms = max(base_ms, MAX_FETCH_TIMEOUT_MS)
        self._by_node: dict[int, int] = {}

    def timeout_ms(self, node: int) -> int:
        return self._by_node.get(node, self.base_ms)

    def timed_out(self, node: int) -> None:
        """A Fetch to ``node`` got no answer in time: allow the next one twice as long."""
        self._by_node[node] = min(self.cap_ms, 2 * self.timeout_ms(node))

    def answered(self, node: int, took_s: float) -> None:
        """A Fetch to ``node`` was answered after ``took_s`` seconds."""
        current = self._by_node.get(node)
        if current is None:
            return
        allowed = max(self.base_ms, min(current, int(2000 * took_s)))
        if allowed == self.base_ms:
            del self._by_node[node]
        else:
            self._by_node[node] = allowed
