"""The manylinux wheels of ``make wheel`` (CPython 3.10-3.13): each installs into a fresh
virtualenv of its Python with no compiler on PATH, pulls only the runtime dependencies and runs
a round trip (compiled and pure), and ``kafka-fast bench``, against Tansu; then core test
files (records with every codec, a group, a transaction) with that Python and the installed
wheel, against the session's broker."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from installed import (
    CORE_TESTS,
    RUNTIME,
    FreshVenv,
    build_wheels,
    core_tests,
    find_python,
    smoke,
    tool_wheels,
    wheel_requires,
)


def _ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def _require(version: str) -> str:
    python = find_python(version)
    if python is None:
        message = (f"CPython {version} not found (python{version} on PATH or under pyenv): "
                   f"install it, e.g. pyenv install {version}")
        if _ci():
            pytest.fail(message)
        pytest.skip(message)
    return python


def _complete(folder: Path, versions: list[str]) -> bool:
    if not list(folder.glob("kafka_fast-*.tar.gz")):
        return False
    return all(list(folder.glob(f"kafka_fast-*-cp{v.replace('.', '')}-*manylinux*.whl"))
               for v in versions)


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """The sdist and wheels for the interpreters present, built once per source hash under
    the cache directory (a lock keeps parallel test workers from building twice)."""
    present = [v for v in build_wheels.VERSIONS if find_python(v)]
    base = build_wheels.cache_dir() / "wheels"
    base.mkdir(parents=True, exist_ok=True)
    folder = base / build_wheels.source_hash()
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _complete(folder, present):
            shutil.rmtree(folder, ignore_errors=True)
            build_wheels.build_all(folder, tuple(present), allow_missing=True)
            for old in base.iterdir():  # builds of sources a week old
                if old.is_dir() and time.time() - old.stat().st_mtime > 7 * 86400:
                    shutil.rmtree(old, ignore_errors=True)
    return folder


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("version", build_wheels.VERSIONS)
def test_wheel_installs_without_a_compiler_and_runs(version, artifacts, tansu, kafka, tmp_path):
    python = _require(version)
    (wheel,) = artifacts.glob(f"kafka_fast-*-cp{version.replace('.', '')}-*.whl")
    assert "manylinux" in wheel.name and wheel.name.endswith("_x86_64.whl"), wheel.name
    assert wheel_requires(wheel) == RUNTIME
    venv = FreshVenv(python, tmp_path)
    pulled = venv.install(wheel)
    closure = venv.requires_closure()
    assert pulled == closure, f"installed {sorted(pulled)}, Requires-Dist gives {sorted(closure)}"
    assert closure >= RUNTIME | {"kafka-fast"}
    smoke(venv, tansu, version)
    # The core tests (records, a group, a transaction) with this Python and the wheel.
    venv.install_test_tools(tool_wheels(python, version))
    summary = core_tests(venv, kafka)
    ran = re.fullmatch(r"(\d+) passed in [\d.]+s(?: \([\d:]+\))?", summary)
    assert ran and int(ran.group(1)) >= len(CORE_TESTS), summary  # nothing failed or skipped
