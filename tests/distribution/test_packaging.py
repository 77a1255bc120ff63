"""The source distribution builds and installs into a fresh virtual environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str, cwd: Path | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.timeout(1800)
def test_sdist_builds_and_installs_in_a_fresh_venv(tmp_path):
    src = tmp_path / "src"
    # A clean copy of the tracked files, as a fresh checkout has them.
    files = run("git", "ls-files", cwd=ROOT).split()
    for name in files:
        target = src / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    run(sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
        str(tmp_path / "dist"), str(src))
    (sdist,) = (tmp_path / "dist").glob("kafka_fast-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    for needed in ("_native/_records.pyx", "_native/_records.pyi", "_native/csrc/crc32c.c",
                   "_native/csrc/crc32c.h", "protocol/messages", "py.typed"):
        assert any(needed in n for n in names), needed

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    run(str(python), "-m", "pip", "install", "-q", str(sdist))
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
    for name in ("_columns", "_crc32c", "_partition", "_records", "_sockio"):
        assert (package / "_native" / f"{name}.pyi").exists(), name
