"""A benchmark measurement and how it is shown."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import asdict, dataclass


@dataclass
class Result:
    """One measured run of one client path."""

    client: str
    path: str
    direction: str
    records: int
    nbytes: int
    wall_s: float
    cpu_s: float
    error: str = ""
    broker_cpu_s: float = 0.0
    max_rss_mb: float = 0.0  # the client process's peak resident memory
    #: the case's process was stopped at the per-case bound (``error`` says after how long)
    timed_out: bool = False

    @property
    def records_per_s(self) -> float:
        return self.records / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.nbytes / self.wall_s / 1e6 if self.wall_s > 0 else 0.0

    @property
    def cpu_per_million(self) -> float:
        return self.cpu_s / self.records * 1e6 if self.records else 0.0

    @property
    def broker_cores(self) -> float:
        """Broker CPU seconds per wall second: near 1.0 means a single-threaded broker is the
        limit; far below it means the client (or the network) is."""
        return self.broker_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def client_cores(self) -> float:
        """Client CPU seconds per wall second."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def remark(self) -> str:
        """What a table shows after the figures: "TIMED OUT ...", "ERROR: ..." or ""."""
        if self.timed_out:
            return f"TIMED OUT {self.error}"
        return f"ERROR: {self.error}" if self.error else ""

    @property
    def label(self) -> str:
        return f"{self.client} {self.path}"

    def as_dict(self) -> dict:
        out = asdict(self)
        out.update(records_per_s=round(self.records_per_s), mb_per_s=round(self.mb_per_s, 2),
                   cpu_s_per_million=round(self.cpu_per_million, 3),
                   client_cores=round(self.client_cores, 2),
                   broker_cores=round(self.broker_cores, 2))
        return out


def proc_stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, CPU seconds of the process itself (utime + stime), CPU seconds of its
    children that ended and were waited for (cutime + cstime)) from /proc/<pid>/stat; None
    when the process is gone (or not readable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
        # The second field, the command name in parentheses, may hold spaces and ")": the
        # fields from the state (field 3) on follow the last ")".
        rest = raw[raw.rindex(b")") + 2:].split()
        tick = os.sysconf("SC_CLK_TCK")
        return (int(rest[1]), (int(rest[11]) + int(rest[12])) / tick,
                (int(rest[13]) + int(rest[14])) / tick)
    except (OSError, IndexError, ValueError):
        return None


def process_cpu(pid: int | None) -> float:
    """User+system CPU seconds used so far by process ``pid`` (0.0 if unknown)."""
    stat = proc_stat(pid) if pid else None
    return 0.0 if stat is None else stat[1]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class Stopwatch:
    """Measures wall and process CPU time between ``start()`` and ``stop()``; a profiler
    that ``perf_control`` talks to samples that span only."""

    def start(self) -> Stopwatch:
        perf_control("enable")
        self.wall0, self.cpu0 = time.perf_counter(), _cpu()
        return self

    def stop(self) -> tuple[float, float]:
        wall, cpu = time.perf_counter() - self.wall0, _cpu() - self.cpu0
        perf_control("disable")
        return wall, cpu


#: environment variables naming the control and acknowledgement FIFOs of a
#: ``perf record --control fifo:CTL,ACK`` run (``benchmarks/profile_paths.py`` sets them)
PERF_CTL, PERF_ACK = "KAFKA_FAST_PERF_CTL", "KAFKA_FAST_PERF_ACK"


def perf_control(command: str) -> None:
    """Send ``enable``/``disable`` to the ``perf record`` this process runs under, if any, and
    wait for its acknowledgement; nothing when the variables are not set."""
    ctl = os.environ.get(PERF_CTL)
    if not ctl:
        return
    with open(ctl, "w") as f:
        f.write(command + "\n")
    ack = os.environ.get(PERF_ACK)
    if ack:
        with open(ack) as f:
            f.readline()
