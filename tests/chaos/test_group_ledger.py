"""The group ledger's rules on hand-written member logs: each rule catches what it is for."""

from __future__ import annotations

from pathlib import Path

import pytest
from group_ledger import GroupLedger

TRUTH = {0: [f"v{i}" for i in range(6)]}


def _ledger(tmp_path: Path, logs: dict[str, tuple[str, bool]],
            final: dict[int, int] | None = None) -> GroupLedger:
    ledger = GroupLedger(TRUTH)
    for name, (text, killed) in logs.items():
        path = tmp_path / f"{name}.events"
        path.write_text(text)
        ledger.read(name, path, killed)
    ledger.check({0: 6} if final is None else final)
    return ledger


def _records(first: int, last: int) -> str:
    return "".join(f"R 0 {o} v{o}\n" for o in range(first, last + 1))


def test_a_clean_hand_over_passes(tmp_path):
    ledger = _ledger(tmp_path, {
        "m1": ("A 1.0 0\n" + _records(0, 2) + "C 1.1 0 3\nV 1.2 0\nX 1.3\n", False),
        "m2": ("A 1.5 0\n" + _records(3, 5) + "C 1.6 0 6\nV 1.7 0\nX 1.8\n", False),
    })
    assert ledger.violations == []
    assert ledger.records == 6 and ledger.repeats() == 0


def test_a_killed_member_may_be_repeated_above_its_last_commit(tmp_path):
    ledger = _ledger(tmp_path, {
        "m1": ("A 1.0 0\n" + _records(0, 3) + "C 1.1 0 2\nR 0 4 v", True),
        "m2": ("A 2.0 0\n" + _records(2, 5) + "C 2.1 0 6\nV 2.2 0\nX 2.3\n", False),
    })
    assert ledger.violations == []
    assert ledger.repeats() == 2


@pytest.mark.parametrize(("logs", "final", "rule"), [
    ({"m1": ("A 1.0 0\n" + _records(0, 5) + "C 1.1 0 6\nV 1.2 0\nX 1.3\n", False),
      "m2": ("A 2.0 0\n" + _records(4, 5) + "V 2.2 0\nX 2.3\n", False)},
     None, "began below offset 6"),
    ({"m1": ("A 1.0 0\n" + _records(0, 3) + "C 1.1 0 4\nR 0 4 v", True),
      "m2": ("A 1.05 0\n" + _records(2, 5) + "C 2.1 0 6\nV 2.2 0\nX 2.3\n", False)},
     None, "read again by m2"),
    ({"m1": ("A 1.0 0\n" + _records(0, 1) + _records(3, 5) + "C 1.1 0 6\nV 1.2 0\nX 1.3\n",
             False)}, None, "read 3 after 1"),
    ({"m1": ("A 1.0 0\n" + _records(0, 4) + "C 1.1 0 5\nV 1.2 0\nX 1.3\n", False)},
     {0: 5}, "1 offsets never read"),
    ({"m1": ("A 1.0 0\n" + _records(0, 5) + "V 1.2 0\nX 1.3\n", False)},
     {0: 4}, "final commit is 4"),
    ({"m1": ("A 1.0 0\n" + _records(0, 2) + "R 0 3 wrong\n" + _records(4, 5)
             + "C 1.1 0 6\nV 1.2 0\nX 1.3\n", False)}, None, "the log holds 'v3'"),
    ({"m1": (_records(0, 5) + "X 1.3\n", False)}, {0: 0}, "read while not assigned"),
    ({"m1": ("A 1.0 0\n" + _records(0, 5) + "C 1.1 0 6\n", False)}, None,
     "never revoked"),
], ids=["repeat-of-committed", "repeat-below-commit", "gap", "lost", "final-commit",
        "wrong-value", "unassigned", "not-closed"])
def test_each_rule_catches_its_violation(tmp_path, logs, final, rule):
    ledger = _ledger(tmp_path, logs, final)
    assert any(rule in v for v in ledger.violations), ledger.violations
