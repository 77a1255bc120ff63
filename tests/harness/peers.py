"""System peers some tests need beyond PyPI (kcat, socat, Java, an aarch64 cross toolchain).

A test whose peer is missing skips with one line naming what to install; under ``CI=true``
it fails instead, so a CI machine without the peer is noticed rather than skipped past.
``tools/install_system_deps.sh`` installs the Debian peers (with root or sudo).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

#: What to install for each peer a test may ask for.
INSTALL = {
    "kcat": "Debian package kcat (bash tools/install_system_deps.sh, as root)",
    "socat": "Debian package socat (bash tools/install_system_deps.sh, as root)",
    "aarch64-linux-gnu-gcc": "Debian packages gcc-aarch64-linux-gnu libc6-dev-arm64-cross "
                             "(bash tools/install_system_deps.sh --with-cross, as root)",
    "qemu-aarch64": "Debian package qemu-user "
                    "(bash tools/install_system_deps.sh --with-cross, as root)",
    "ss": "the Debian package iproute2",
    "openssl/engine.h": "Debian packages libssl-dev and gcc "
                        "(bash tools/install_system_deps.sh, as root)",
    "perf": "Debian package linux-perf (bash tools/install_system_deps.sh, as root)",
    "java": "Java 17 (e.g. Debian package openjdk-17-jre-headless), on PATH or in JAVA_HOME",
}


def on_ci() -> bool:
    """True under CI (``CI`` set to anything but empty, 0 or false): missing peers fail."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def missing(peer: str, install: str | None = None) -> NoReturn:
    """Skip the current test (fail it under CI) with one line: what is missing, what to install."""
    message = f"{peer} not found: install {install or INSTALL.get(peer, peer)}"
    if on_ci():
        pytest.fail(f"{message} (CI=true: missing peers fail)", pytrace=False)
    pytest.skip(message)


def require_tool(name: str) -> str:
    """The path of command ``name``, or skip/fail the test as ``missing`` does."""
    path = shutil.which(name)
    if path is None:
        missing(name)
    return path


def java_path() -> str | None:
    """The ``java`` Spark would start: ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def require_java() -> str:
    path = java_path()
    if path is None:
        missing("java")
    return path
