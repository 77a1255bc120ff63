"""Peak resident memory of a child process, as the child itself used it.

``ru_maxrss`` from ``wait4`` is no good for this: a child started with vfork/fork carries the
parent's high-water mark across ``exec`` (Linux records the old address space's peak), so a
child of a large test worker reports the worker's size. ``VmHWM`` in ``/proc/<pid>/status`` is
the high-water mark of the child's own address space after ``exec``; it only grows, so the
last reading before the child exits is its peak (sampled every ``interval`` seconds).
"""

from __future__ import annotations

import subprocess
import time


def _vm_hwm_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None  # a zombie has no memory lines


def wait_with_peak_rss(proc: subprocess.Popen, timeout: float,
                       interval: float = 0.01) -> tuple[int, int]:
    """(exit code, peak RSS in KiB) of ``proc``, waited for at most ``timeout`` seconds
    (killed and AssertionError after that)."""
    deadline = time.monotonic() + timeout
    peak = 0
    while proc.poll() is None:
        hwm = _vm_hwm_kib(proc.pid)
        if hwm is not None:
            peak = max(peak, hwm)
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(f"{proc.args!r} still running after {timeout} s")
        time.sleep(interval)
    if peak == 0:
        raise AssertionError(f"{proc.args!r} ended before its memory could be read")
    return proc.returncode, peak
