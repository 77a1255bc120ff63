"""What the soak's per-second samples must show: bounded growth of the client process's
memory, threads, descriptors and connections, and progress without long stalls.

A sample is a dict with ``t`` (seconds since the client started), ``rss_mb``, ``threads``,
``fds``, ``tcp`` and the progress counters ``delivered``, ``transformed``, ``grouped``.
"""

from __future__ import annotations

from statistics import median
from typing import Any

#: How far the median of the end window may lie above that of the first steady window.
MARGINS: dict[str, float] = {"rss_mb": 64.0, "threads": 2, "fds": 12, "tcp": 6}
#: Longest time a progress counter may stand still while it has work to do (seconds).
STALL_LIMIT = 60.0
COUNTERS = ("delivered", "transformed", "grouped")


def windows(seconds: float) -> tuple[tuple[float, float], tuple[float, float]]:
    """The first steady window (after start-up) and the end window of a run producing for
    ``seconds``: minutes 1-3 and the last 5 minutes of 30; 30-60 s and the last minute of 3."""
    base = (min(60.0, seconds / 6), min(180.0, seconds / 3))
    end = (seconds - min(300.0, seconds / 3), seconds)
    return base, end


def _median(samples: list[dict[str, Any]], key: str, lo: float, hi: float) -> float | None:
    values = [s[key] for s in samples if lo <= s["t"] <= hi and s.get(key) is not None]
    return float(median(values)) if values else None


def growth(samples: list[dict[str, Any]], seconds: float) -> dict[str, dict[str, Any]]:
    """Per resource: first steady window's median, end window's median, the margin and
    whether the end stays within it."""
    (b0, b1), (e0, e1) = windows(seconds)
    out = {}
    for key, margin in MARGINS.items():
        base, end = _median(samples, key, b0, b1), _median(samples, key, e0, e1)
        ok = base is not None and end is not None and end <= base + margin
        out[key] = {"base": base, "end": end, "margin": margin, "ok": ok,
                    "windows": [[b0, b1], [e0, e1]]}
    return out


def stalls(samples: list[dict[str, Any]], records: int) -> dict[str, float]:
    """Per counter, the longest time it stood still while behind: the producer's delivery
    reports short of ``records``, a consumer's count short of the reports delivered."""
    out = {}
    for key in COUNTERS:
        longest = 0.0
        moved = samples[0]["t"] if samples else 0.0
        last = None
        for s in samples:
            target = records if key == "delivered" else s["delivered"]
            if last is None or s[key] > last or s[key] >= target:
                moved = s["t"]
            else:
                longest = max(longest, s["t"] - moved)
            last = s[key]
        out[key] = round(longest, 1)
    return out


def violations(samples: list[dict[str, Any]], records: int, seconds: float) -> list[str]:
    """Broken growth bounds and stalls longer than STALL_LIMIT, as sentences."""
    found = []
    for key, g in growth(samples, seconds).items():
        if not g["ok"]:
            found.append(f"{key}: end median {g['end']} above first steady median "
                         f"{g['base']} by more than {g['margin']}")
    for key, longest in stalls(samples, records).items():
        if longest > STALL_LIMIT:
            found.append(f"{key}: no progress for {longest}s (limit {STALL_LIMIT:.0f}s)")
    return found
