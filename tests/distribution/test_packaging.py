"""The source distribution (the one the wheels are built from: tools/build_wheels.py, from the
checkout's files as a fresh clone has them) installs into a fresh virtual environment, compiling
its extensions there, and passes the wheels' smoke test (round trip compiled and pure,
``kafka-fast bench``) against Tansu."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from installed import FreshVenv, build_wheels, smoke

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str, cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.timeout(1800)
def test_sdist_builds_and_installs_in_a_fresh_venv(tmp_path, tansu):
    (sdist,) = build_wheels.cached().glob("kafka_fast-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    for needed in ("_native/_records.pyx", "_native/_records.pyi", "_native/csrc/crc32c.c",
                   "_native/csrc/crc32c.h", "protocol/messages", "py.typed"):
        assert any(needed in n for n in names), needed

    fresh = FreshVenv(sys.executable, tmp_path, compiler=True)
    env_dir = fresh.dir
    python = fresh.python
    pulled = fresh.install(sdist)
    assert pulled == fresh.requires_closure()
    out = run(str(python), "-c",
              "import kafka_fast, kafka_fast.records as r; "
              "print(kafka_fast.crc32c_impl(), hex(kafka_fast.crc32c(b'123456789')), "
              "r.NATIVE, kafka_fast.__version__)",
              cwd=tmp_path)
    impl, crc, native, version = out.split()
    assert impl != "python" and crc == "0xe3069283" and native == "True"
    assert version == run(sys.executable, "-c",
                          "import kafka_fast; print(kafka_fast.__version__)").strip()
    assert (env_dir / "bin" / "kafka-fast").exists()
    # Type checkers find the package typed, the compiled modules included (their stubs).
    package = Path(run(str(python), "-c", "import kafka_fast, os; "
                       "print(os.path.dirname(kafka_fast.__file__))", cwd=tmp_path).strip())
    assert (package / "py.typed").exists()
    for name in ("_native/_columns", "_native/_crc32c", "_native/_fetchwire", "_native/_message",
                 "_native/_partition", "_native/_producewire", "_native/_records",
                 "_native/_sockio", "producer/_produce", "producer/_routing", "message"):
        assert (package / f"{name}.pyi").exists(), name
    smoke(fresh, tansu, "{}.{}".format(*sys.version_info[:2]))
