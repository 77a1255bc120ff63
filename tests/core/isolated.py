"""Run code that could crash the interpreter in a child process, so a crash fails one test
instead of ending the test run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import kafka_fast

ROOT = str(Path(kafka_fast.__file__).resolve().parents[1])


def run_isolated(code: str, *, pure: bool, timeout: float = 120) -> str:
    """Run ``code`` in a fresh interpreter with the compiled engine or (``pure``) its twin;
    returns its stdout. A crash, a non-zero exit or a timeout fails with the child's stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_FAST_")}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [env.get("PYTHONPATH")])])
    if pure:
        env["KAFKA_FAST_NO_EXTENSIONS"] = "1"
    # the engine asked for, from the tree this process tested (cwd=ROOT: `-c` puts the working
    # directory first on sys.path)
    check = (f"import kafka_fast.records as _r\n"
             f"assert _r.NATIVE is {not pure}, 'wrong record engine'\n"
             f"assert _r.__file__.startswith({ROOT!r}), _r.__file__\n")
    proc = subprocess.run([sys.executable, "-c", check + code], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        how = (f"killed by {signal.Signals(-proc.returncode).name}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        raise AssertionError(f"child interpreter failed ({how}):\n{proc.stderr[-4000:]}")
    return proc.stdout
