"""Seeds, sizes and the record of one chaos test: what was injected, when, and what was checked.

Every chaos test draws its randomness from one ``random.Random`` seeded with the session's
seed (``CHAOS_SEED``, random when unset) and the test's name, so a failing schedule can be
replayed with ``CHAOS_SEED=<seed>``.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field

SEED_ENV = "CHAOS_SEED"


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """An integer setting from the environment; a clear error when it is not one."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={value} is below the minimum {minimum}")
    return value


def session_seed() -> int:
    """``CHAOS_SEED`` when set, otherwise a fresh random seed."""
    if os.environ.get(SEED_ENV, "").strip():
        return env_int(SEED_ENV, 0, minimum=0)
    return random.SystemRandom().randrange(1 << 32)


@dataclass
class ChaosRun:
    """One chaos test's seed, random source and log of faults and checked records."""

    test: str
    seed: int
    rng: random.Random = field(init=False)
    started: float = field(default_factory=time.monotonic)
    faults: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A str seed is hashed with SHA-512: the same on every run and interpreter.
        self.rng = random.Random(f"{self.seed}:{self.test}")

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def fault(self, what: str) -> None:
        """Note a fault as it is injected (time since the test started, and what)."""
        line = f"{self.elapsed():7.2f}s {what}"
        self.faults.append(line)
        print(f"chaos: {line}", flush=True)

    def check(self, what: str, count: int) -> None:
        """Note how many items (records, reports, offsets) a check covered."""
        self.checked[what] = self.checked.get(what, 0) + count

    def summary(self) -> str:
        checked = ", ".join(f"{k} {v}" for k, v in self.checked.items()) or "nothing"
        return (f"{self.test}: seed {self.seed} ({SEED_ENV}={self.seed} repeats it), "
                f"{self.elapsed():.1f}s, {len(self.faults)} faults, checked: {checked}")
