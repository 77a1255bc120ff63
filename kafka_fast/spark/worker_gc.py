"""Spark Python worker processes: keep PySpark's garbage collection per task short.

PySpark's worker daemon runs ``gc.collect()`` after every task of a reused worker, and each
full collection walks every object the worker holds: PySpark, pyarrow, pandas (which
PySpark's write path imports), numpy and the client make about 85,000 of them, 30-75 ms of
CPU per collection, on every task. ``settle()``, called by the data source's tasks, moves
the objects alive then into the interpreter's permanent generation (``gc.freeze()``), once
per worker process and again after it loaded more modules: later collections walk only
what the tasks make. Frozen objects are still freed when nothing refers to them; only
reference cycles among them are no longer reclaimed (mostly the modules and classes loaded,
kept for the worker's life anyway).

It acts only inside a Spark task (``pyspark.TaskContext.get()`` is set only in Spark's
Python worker processes): the driver, and any process that calls the reader or writer
outside Spark, are left alone.
"""

from __future__ import annotations

import gc
import os
import sys

# the process that froze its objects (a worker forked after that starts again), and how many
# modules it had loaded then
_settled_pid: int | None = None
_settled_modules = 0


def in_spark_task() -> bool:
    """True in a Spark Python worker process running a task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return False
    return TaskContext.get() is not None


def settle() -> bool:
    """Freeze the objects of this Spark Python worker (see the module docstring): at the
    first call, and again when modules were loaded since (a worker that ran reads and then
    runs a write has loaded PySpark's write path meanwhile); True when this call froze.
    Call it after the modules the task needs are loaded."""
    global _settled_pid, _settled_modules
    pid = os.getpid()
    if _settled_pid == pid and len(sys.modules) <= _settled_modules:
        return False
    if not in_spark_task():
        return False
    import numpy  # noqa: F401  (loaded by every task: frozen with the rest)
    import pyarrow  # noqa: F401

    gc.collect()  # what is garbage already is not frozen
    gc.freeze()
    _settled_pid, _settled_modules = pid, len(sys.modules)
    return True
