"""The logs of group members (group_member.py) checked against the partitions' contents.

Rules, per partition:
- a member reads a partition only while it is assigned to it, each assignment (session)
  from one offset on without gaps or repeats, and every record it reads is the record
  stored at that offset;
- a session starts at or above every offset committed before it was assigned;
- a record read in two sessions lies at or above the last commit of the earlier one
  (repeats only of what a revoked, lost or killed member had not committed);
- together the sessions read every offset, and the group's final commit is the end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Session:
    """One assignment of a partition to a member."""

    member: str
    partition: int
    start: float
    first: int = -1
    last: int = -1
    count: int = 0
    last_commit: int = -1
    end: str = "open"

    def describe(self) -> str:
        return (f"{self.member} [{self.partition}] assigned at {self.start:.3f}, read "
                f"{self.first}..{self.last}, committed {self.last_commit}, {self.end}")


@dataclass
class GroupLedger:
    """Every member's sessions, commits and errors, and the violations found."""

    truth: dict[int, list[str]]
    sessions: list[Session] = field(default_factory=list)
    commits: dict[int, list[tuple[float, int]]] = field(default_factory=dict)
    seen: dict[int, bytearray] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    failed_commits: Counter = field(default_factory=Counter)
    errors: Counter = field(default_factory=Counter)
    records: int = 0

    def __post_init__(self) -> None:
        self.seen = {p: bytearray(len(v)) for p, v in self.truth.items()}
        self.commits = {p: [] for p in self.truth}

    def violation(self, text: str) -> None:
        self.violations.append(text)

    # -- reading the logs ------------------------------------------------------------------
    def read(self, member: str, path: Path, killed: bool) -> None:
        """Add one member's log (``killed``: it ended by SIGKILL, its last line may be cut)."""
        data = path.read_text()
        lines = data.split("\n")
        cut = lines.pop()  # "" after a complete last line
        if cut and not killed:
            self.violation(f"{member}: log ends in a cut line {cut!r}")
        owned: dict[int, Session] = {}
        closed = False
        for line in lines:
            kind, _, rest = line.partition(" ")
            if kind == "R":
                self._record(member, owned, rest)
            elif kind in ("A", "V", "L"):
                t, _, parts = rest.partition(" ")
                for p in map(int, filter(None, parts.split(","))):
                    self._assignment(member, owned, kind, float(t), p)
            elif kind == "C":
                t, p, offset = rest.split(" ")
                self._commit(member, owned, float(t), int(p), int(offset))
            elif kind == "F":
                self.failed_commits[rest.split(" ")[1]] += 1
            elif kind == "E":
                _, code, fatal = rest.split(" ")
                self.errors[code] += 1
                if fatal == "1":
                    self.violation(f"{member}: fatal error {code} from consume()")
            elif kind == "X":
                closed = True
            else:
                self.violation(f"{member}: unreadable log line {line!r}")
        for session in owned.values():
            session.end = "killed" if killed else "not revoked at close"
            if not killed:
                self.violation(f"{session.describe()}: never revoked")
        if not killed and not closed:
            self.violation(f"{member}: did not close cleanly")

    def _assignment(self, member: str, owned: dict[int, Session], kind: str, t: float,
                    p: int) -> None:
        if p not in self.truth:
            self.violation(f"{member}: event {kind} for unknown partition {p}")
            return
        if kind == "A":
            if p in owned:
                self.violation(f"{member}: [{p}] assigned twice without revocation")
            owned[p] = session = Session(member, p, t)
            self.sessions.append(session)
            return
        session = owned.pop(p, None)
        if session is None:
            self.violation(f"{member}: [{p}] {'revoked' if kind == 'V' else 'lost'} "
                           "but not assigned")
        else:
            session.end = "revoked" if kind == "V" else "lost"

    def _record(self, member: str, owned: dict[int, Session], rest: str) -> None:
        p_text, offset_text, value = rest.split(" ")
        p, offset = int(p_text), int(offset_text)
        self.records += 1
        session = owned.get(p)
        if session is None:
            self.violation(f"{member}: record [{p}]@{offset} read while not assigned")
            return
        if session.count and offset != session.last + 1:
            self.violation(f"{session.describe()}: read {offset} after {session.last}")
        if not session.count:
            session.first = offset
        session.last = offset
        session.count += 1
        truth = self.truth[p]
        if offset >= len(truth) or truth[offset] != value:
            stored = truth[offset] if offset < len(truth) else "nothing"
            self.violation(f"{member}: [{p}]@{offset} read {value!r}, the log holds {stored!r}")
            return
        seen = self.seen[p]
        if seen[offset] < 255:
            seen[offset] += 1

    def _commit(self, member: str, owned: dict[int, Session], t: float, p: int,
                offset: int) -> None:
        session = owned.get(p)
        if session is None:
            self.violation(f"{member}: committed [{p}] at {offset} while not assigned")
            return
        session.last_commit = max(session.last_commit, offset)
        self.commits[p].append((t, offset))

    # -- the rules -------------------------------------------------------------------------
    def check(self, final_commits: dict[int, int]) -> None:
        """Apply the rules across members; ``final_commits``: the group's committed offsets."""
        for p, truth in self.truth.items():
            sessions = sorted((s for s in self.sessions if s.partition == p and s.count),
                              key=lambda s: s.start)
            for i, later in enumerate(sessions):
                before = [off for t, off in self.commits[p] if t < later.start]
                if before and later.first < max(before):
                    self.violation(f"{later.describe()}: began below offset {max(before)}, "
                                   "committed before the assignment")
                for earlier in sessions[:i]:
                    lo, hi = max(earlier.first, later.first), min(earlier.last, later.last)
                    if lo <= hi and lo < earlier.last_commit:
                        self.violation(
                            f"[{p}] offsets {lo}..{min(hi, earlier.last_commit - 1)} read again "
                            f"by {later.member} after {earlier.describe()}")
            missing = [o for o, n in enumerate(self.seen[p]) if n == 0]
            if missing:
                self.violation(f"[{p}] {len(missing)} offsets never read by the group, "
                               f"first {missing[:10]}")
            if final_commits.get(p) != len(truth):
                self.violation(f"[{p}] the group's final commit is {final_commits.get(p)}, "
                               f"the partition ends at {len(truth)}")

    def repeats(self) -> int:
        """Records read more than once (over all partitions)."""
        return sum(n - 1 for seen in self.seen.values() for n in seen if n > 1)

    def summary(self) -> str:
        ends = Counter(s.end for s in self.sessions)
        return (f"{self.records} records read ({self.repeats()} repeats) in "
                f"{len(self.sessions)} sessions {dict(ends)}, "
                f"{sum(len(c) for c in self.commits.values())} commits, failed commits "
                f"{dict(self.failed_commits)}, consume errors {dict(self.errors)}")
