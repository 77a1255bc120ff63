"""How the test run's JVMs (Kafka nodes, Spark) start cheaply: they are many, short-lived and
lightly loaded, so HotSpot's client compiler alone (``CLIENT_COMPILER``: its optimising
compiler costs more CPU than its faster code gives back there) and, for Kafka nodes, a
class-data archive (HotSpot's AppCDS) per java binary and classpath, from which they map their
classes instead of parsing and verifying the jars each time.

The archive is written once by a training run (``-XX:ArchiveClassesAtExit``) under a file
lock (parallel test workers wait for the first) into the cache directory, keyed by the java
binary and the jars' names, sizes and times. HotSpot checks the archive against the classpath
itself and runs without it (with a warning in the JVM's log) if they do not match.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

#: Unknown -XX options (a JVM other than HotSpot) are ignored rather than fatal.
TOLERANT = "-XX:+IgnoreUnrecognizedVMOptions"
#: HotSpot's client compiler (C1) only.
CLIENT_COMPILER = "-XX:TieredStopAtLevel=1"
#: Both, as a java command's arguments and as one option string (Spark's
#: ``extraJavaOptions``).
QUICK_OPTIONS = (TOLERANT, CLIENT_COMPILER)
QUICK_JVM = " ".join(QUICK_OPTIONS)


def spark_submit_args() -> str:
    """``PYSPARK_SUBMIT_ARGS`` for a Spark application a test starts in a process of its own:
    its driver and executors with ``QUICK_JVM``."""
    return (f'--driver-java-options "{QUICK_JVM}" '
            f'--conf "spark.executor.extraJavaOptions={QUICK_JVM}" pyspark-shell')


def _key(java: str, libs: Path) -> str:
    binary = Path(java).resolve()
    parts = [str(binary), str(binary.stat().st_mtime_ns), str(libs.resolve())]
    for jar in sorted(libs.glob("*.jar")):
        st = jar.stat()
        parts.append(f"{jar.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def archive_for(java: str, libs: Path, folder: Path,
                train: Callable[[Path], None]) -> Path | None:
    """The archive for ``java`` with ``libs/*`` as its classpath, trained first if there is
    none (``train(path)`` runs a JVM that writes its classes to ``path`` when it exits); None
    when training wrote nothing (the JVMs then start without an archive)."""
    archive = folder / f"{libs.parent.name}-{_key(java, libs)}.jsa"
    if archive.exists():
        return archive
    folder.mkdir(parents=True, exist_ok=True)
    with open(archive.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return archive
        partial = archive.with_suffix(f".{os.getpid()}.part")
        try:
            train(partial)
            if partial.exists() and partial.stat().st_size > 0:
                os.replace(partial, archive)
                return archive
            return None
        finally:
            partial.unlink(missing_ok=True)
