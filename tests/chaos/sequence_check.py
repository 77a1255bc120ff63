"""Exactly once and in order per partition: delivery reports and an independent read-back
(confluent-kafka) compared with the records a producer was asked to write."""

from __future__ import annotations

from harness.brokers import Broker
from readback import read_confluent


def delivery_problems(delivered: dict[int, list[tuple[bytes, int]]],
                      expected: dict[int, list[bytes]]) -> list[str]:
    """Reports that differ from the expected order or are not at offsets 0, 1, 2, ..."""
    problems = []
    for p, want in expected.items():
        got = delivered.get(p, [])
        values = [v for v, _ in got]
        offsets = [o for _, o in got]
        if values != want:
            problems.append(f"[{p}] {len(values)} reports for {len(want)} records, first "
                            f"difference at {_first_difference(values, want)}")
        if offsets != list(range(len(offsets))):
            problems.append(f"[{p}] reported offsets not 0..{len(offsets) - 1}, first "
                            f"difference at {_first_difference(offsets, range(len(offsets)))}")
    return problems


def read_back(broker: Broker, topic: str, expected: dict[int, list[bytes]],
              timeout: float = 120.0) -> tuple[dict[int, list[bytes]], list[str]]:
    """Read ``topic`` with confluent-kafka; returns ``{partition: values}`` and what differs
    from ``expected`` (missing, repeated or reordered records, gaps in the offsets)."""
    total = sum(len(v) for v in expected.values())
    got = read_confluent(broker, topic, len(expected), total, timeout=timeout)
    stored: dict[int, list[bytes]] = {p: [] for p in expected}
    problems = []
    for p in expected:
        rows = [g for g in got if g.partition == p]
        stored[p] = [g.value for g in rows]
        offsets = [g.offset for g in rows]
        if stored[p] != expected[p]:
            problems.append(f"[{p}] holds {len(rows)} records for {len(expected[p])}, first "
                            f"difference at {_first_difference(stored[p], expected[p])}")
        if offsets != list(range(len(offsets))):
            problems.append(f"[{p}] offsets not contiguous from 0, first difference at "
                            f"{_first_difference(offsets, range(len(offsets)))}")
    return stored, problems


def _first_difference(got, want) -> str:
    got, want = list(got), list(want)
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"#{i}: {a!r} instead of {b!r}"
    return f"#{min(len(got), len(want))}: lengths {len(got)} and {len(want)}"
