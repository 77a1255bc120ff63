"""Child processes owned by the harness: started with a log file, stopped by PID."""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_running: set[ManagedProcess] = set()


def _die_with_parent() -> None:
    # Runs in the child before exec: get SIGKILL if the test process dies, so a
    # crashed or killed pytest never leaves brokers behind.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


class ManagedProcess:
    """A child process in its own process group whose output goes to ``log_path``."""

    def __init__(
        self,
        argv: list[str],
        log_path: Path,
        env: dict[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
        stdout_pipe: bool = False,
    ) -> None:
        self.argv = argv
        self.log_path = Path(log_path)
        self._log = open(self.log_path, "ab")  # closed in stop()
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.popen = subprocess.Popen(
            argv,
            stdin=stdin,
            stdout=subprocess.PIPE if stdout_pipe else self._log,
            stderr=self._log,
            env=full_env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.pid = self.popen.pid
        _running.add(self)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds; return the exit code."""
        _running.discard(self)
        try:
            if self.alive():
                self._signal(signal.SIGTERM)
                try:
                    self.popen.wait(grace)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    self.popen.wait(grace)
            # Forked helpers (e.g. one per connection) share the group: end them too.
            self._signal(signal.SIGKILL)
        finally:
            for stream in (self.popen.stdin, self.popen.stdout):
                if stream is not None:
                    stream.close()
            self._log.close()
        return self.popen.returncode

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def log_tail(self, limit: int = 6000) -> str:
        """The last ``limit`` characters of the process log."""
        try:
            data = self.log_path.read_bytes()
        except OSError as exc:
            return f"<log {self.log_path} unreadable: {exc}>"
        text = data[-limit:].decode("utf-8", "replace")
        prefix = "...\n" if len(data) > limit else ""
        return f"{prefix}{text}"


@atexit.register
def _stop_all() -> None:
    for proc in list(_running):
        proc.stop(grace=1.0)
