"""Consumer group members (group_member.py) as child processes a test can SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.process import ManagedProcess

MEMBER = Path(__file__).with_name("group_member.py")
REPO = Path(__file__).resolve().parents[2]


@dataclass
class MemberProcess:
    name: str
    log: Path
    process: ManagedProcess
    killed: bool = False


class MemberProcesses:
    """The members of one group on one topic; each writes its event log under ``workdir``."""

    def __init__(self, bootstrap: str, topic: str, group: str, workdir: Path) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.workdir = workdir
        self.members: dict[str, MemberProcess] = {}
        self._env = {"PYTHONPATH": os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}

    def start(self) -> str:
        """Start one more member; returns its name."""
        name = f"m{len(self.members) + 1}"
        log = self.workdir / f"{name}.events"
        process = ManagedProcess(
            [sys.executable, str(MEMBER), self.bootstrap, self.topic, self.group, str(log)],
            self.workdir / f"{name}.out", env=self._env, stdin=subprocess.PIPE)
        self.members[name] = MemberProcess(name, log, process)
        return name

    def running(self) -> list[str]:
        return [m.name for m in self.members.values() if m.process.alive()]

    def kill(self, name: str) -> None:
        """SIGKILL one member (a crash: no commit, no leaving the group)."""
        member = self.members[name]
        member.killed = True
        os.kill(member.process.pid, signal.SIGKILL)
        member.process.popen.wait(10)
        member.process.stop()

    def check_alive(self) -> None:
        """Raise with its output if a member not killed by the test has exited."""
        for m in self.members.values():
            if not m.killed and not m.process.alive():
                raise RuntimeError(f"member {m.name} exited ({m.process.popen.returncode}):\n"
                                   f"{m.process.log_tail()}")

    def stop_all(self, timeout: float = 30.0) -> dict[str, int | None]:
        """Close every running member (EOF on stdin) and wait; returns their exit codes."""
        running = [m for m in self.members.values() if not m.killed]
        for m in running:
            stdin = m.process.popen.stdin
            if stdin is not None and not stdin.closed:
                stdin.close()
        deadline = time.monotonic() + timeout
        codes: dict[str, int | None] = {}
        for m in running:
            try:
                m.process.popen.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            codes[m.name] = m.process.popen.poll()
            m.process.stop(grace=1.0)
        return codes

    def outputs(self) -> str:
        return "\n".join(f"--- {m.name} ---\n{m.process.log_tail(3000)}"
                         for m in self.members.values())
