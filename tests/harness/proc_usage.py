"""What a process holds, read from /proc: resident memory, threads, open file descriptors and
established TCP connections (its sockets found in /proc/net/tcp and tcp6)."""

from __future__ import annotations

import os
from dataclasses import dataclass

ESTABLISHED = "01"


def rss_bytes(pid: int | str = "self") -> int:
    """Resident set size of ``pid`` (default this process), from /proc/<pid>/statm."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def socket_inodes(pid: int | str = "self") -> set[int]:
    """Inodes of the sockets among ``pid``'s open file descriptors."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def tcp_connections(ports: set[int] | None = None, pid: int | str = "self"
                    ) -> dict[int, set[int]]:
    """``{remote_port: {inode}}`` of ``pid``'s established TCP sockets (to ``ports`` only,
    when given)."""
    mine = socket_inodes(pid)
    out: dict[int, set[int]] = {p: set() for p in ports or ()}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            state, inode = fields[3], int(fields[9])
            if (state == ESTABLISHED and inode in mine
                    and (ports is None or remote_port in ports)):
                out.setdefault(remote_port, set()).add(inode)
    return out


@dataclass(frozen=True)
class Usage:
    rss_mb: float
    threads: int
    fds: int
    tcp: int


def usage(pid: int) -> Usage | None:
    """``pid``'s resident memory (MB), threads, open descriptors and established TCP
    connections; None once it has exited."""
    rss_kib = threads = -1
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss_kib = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    if rss_kib < 0 or threads < 0:
        return None  # a zombie has no memory lines
    tcp = sum(len(v) for v in tcp_connections(pid=pid).values())
    return Usage(round(rss_kib / 1024, 1), threads, fds, tcp)
