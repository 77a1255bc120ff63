"""The manylinux wheels of ``make wheel`` (CPython 3.10-3.13): each installs into a fresh
virtualenv of its Python with no compiler on PATH, pulls only the runtime dependencies and runs
a round trip in pure mode and ``kafka-fast bench``; then the core test set (installed.CORE_TESTS:
record engine, protocol, producer and consumer without a broker, then records with every codec,
a group and a transaction on it) with that Python and the installed wheel, not the checkout's
sources. Everything runs on the session's one broker."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from installed import (
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


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """The sdist and wheels for the interpreters present, built once per source hash under
    the cache directory (``make test`` builds them before the tests start)."""
    return build_wheels.cached()


@pytest.mark.timeout(2400)
@pytest.mark.parametrize("version", build_wheels.VERSIONS)
def test_wheel_installs_without_a_compiler_and_runs(version, artifacts, kafka, tmp_path):
    python = _require(version)
    (wheel,) = artifacts.glob(f"kafka_fast-*-cp{version.replace('.', '')}-*.whl")
    assert "manylinux" in wheel.name and wheel.name.endswith("_x86_64.whl"), wheel.name
    assert wheel_requires(wheel) == RUNTIME
    venv = FreshVenv(python, tmp_path)
    pulled = venv.install(wheel)
    closure = venv.requires_closure()
    assert pulled == closure, f"installed {sorted(pulled)}, Requires-Dist gives {sorted(closure)}"
    assert closure >= RUNTIME | {"kafka-fast"}
    smoke(venv, kafka, version, compiled=False)
    # The core test set with this Python and the wheel's compiled engine.
    venv.install_test_tools(tool_wheels(python, version))
    summary, served = core_tests(venv, kafka)
    ran = re.fullmatch(r"(\d+) passed(?:, \d+ deselected)? in [\d.]+s(?: \([\d:]+\))?",
                       summary)
    assert ran and int(ran.group(1)) >= 900, summary  # nothing failed or skipped
    assert served["python"] == version and served["native"] is True, served
    assert served["outside"] == [], "kafka_fast modules loaded from outside the venv"
    assert Path(served["package"]).resolve().is_relative_to(venv.dir.resolve()), served


def test_wheel_builds_use_pyprojects_build_requirements():
    # The wheels build without isolation in tool virtualenvs holding these: the same list as
    # pyproject.toml's build-system.requires, or a wheel would build against other packages.
    import tomllib

    declared = tomllib.loads((build_wheels.ROOT / "pyproject.toml").read_text())
    assert list(build_wheels.BUILD_REQUIRES) == declared["build-system"]["requires"]
    assert set(build_wheels.BUILD_REQUIRES) < set(build_wheels.TOOLS)
