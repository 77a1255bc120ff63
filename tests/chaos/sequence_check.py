"""Exactly once and in order per partition: delivery reports and an independent read-back
(confluent-kafka) compared with the records a producer was asked to write."""

from __future__ import annotations

from harness.brokers import Broker
from readback import read_confluent


def expected_offsets(count: int, marker_every: int = 0) -> list[int]:
    """Offsets of a partition's ``count`` records: 0, 1, 2, ..., skipping one offset (the
    commit marker) after every ``marker_every`` records of committed transactions."""
    if not marker_every:
        return list(range(count))
    return [j + j // marker_every for j in range(count)]


def delivery_problems(delivered: dict[int, list[tuple[bytes, int]]],
                      expected: dict[int, list[bytes]], marker_every: int = 0,
                      unknown_offsets: bool = False) -> list[str]:
    """Where the delivery reports differ from the expected records: records missing or
    reported twice, reports out of production order, and offsets other than
    ``expected_offsets`` (``unknown_offsets``: a report may carry no offset, as for a
    duplicate the mock cluster acknowledged without storing)."""
    problems = []
    for p, want in expected.items():
        got = delivered.get(p, [])
        values = [v for v, _ in got]
        if sorted(values) != sorted(want):
            problems.append(f"[{p}] {len(got)} reports for {len(want)} records, "
                            f"{len(set(want) - set(values))} never reported, "
                            f"{len(values) - len(set(values))} reported twice")
            continue
        if values != want:
            problems.append(f"[{p}] reports served out of production order, first at "
                            f"{_first_difference(values, want)}")
        offsets = [o if o is not None and o >= 0 else None for _, o in got]
        if unknown_offsets:
            known = [(j, o) for j, o in enumerate(offsets) if o is not None]
        else:
            known = list(enumerate(offsets))
        want_offsets = expected_offsets(len(want), marker_every)
        position = {v: i for i, v in enumerate(want)}
        wrong = [(values[j], o) for j, o in known if o != want_offsets[position[values[j]]]]
        if wrong:
            problems.append(f"[{p}] {len(wrong)} records reported at other offsets than "
                            f"expected, first {wrong[0]}")
    return problems


def read_back(broker: Broker, topic: str, expected: dict[int, list[bytes]],
              timeout: float = 120.0, marker_every: int = 0
              ) -> tuple[dict[int, list[bytes]], list[str]]:
    """Read ``topic`` with confluent-kafka; returns ``{partition: values}`` and what differs
    from ``expected`` (missing, repeated or reordered records, offsets other than
    ``expected_offsets``)."""
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
        want_offsets = expected_offsets(len(offsets), marker_every)
        if offsets != want_offsets:
            problems.append(f"[{p}] offsets not the expected ones, first difference at "
                            f"{_first_difference(offsets, want_offsets)}")
    return stored, problems


def _first_difference(got, want) -> str:
    got, want = list(got), list(want)
    for i, (a, b) in enumerate(zip(got, want, strict=False)):
        if a != b:
            return f"#{i}: {a!r} instead of {b!r}"
    return f"#{min(len(got), len(want))}: lengths {len(got)} and {len(want)}"
