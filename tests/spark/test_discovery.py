"""PySpark finds ``format("kafka_fast")`` on its own (the ``pyspark_kafka_fast`` module)
however kafka_fast is installed: as a wheel (files in site-packages), as an editable install
(what setuptools' PEP 660 build of this project puts in site-packages), and shipped as a zip
(``--py-files``). Each runs PySpark's own look-up in a fresh interpreter started in /tmp
with PYTHONPATH unset, so nothing of the repository is on sys.path unless the install puts
it there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kafka_fast", "pyspark_kafka_fast")

LOOKUP = """
import io, json, sys
from pyspark.serializers import read_int
from pyspark.sql.worker import lookup_data_sources
out = io.BytesIO()
lookup_data_sources._main(io.BytesIO(), out)  # what Spark runs to find data sources
out.seek(0)
names = []
for _ in range(read_int(out)):
    names.append(out.read(read_int(out)).decode())
    out.read(read_int(out))
import pyspark_kafka_fast
print(json.dumps({"names": names, "module": pyspark_kafka_fast.__file__, "path": sys.path}))
"""


def throwaway_python(tmp_path: Path, extra_pth: str = "") -> tuple[Path, Path]:
    """A venv whose site-packages reaches this environment's libraries (pyspark, numpy,
    pyarrow) through a plain path entry, which runs none of their ``.pth`` files, so
    kafka_fast is not importable in it until a test installs it; (python, site-packages)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60).stdout.strip())
    (site / "libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n" + extra_pth)
    return python, site


def lookup(python: Path, env_extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(env_extra or {})
    done = subprocess.run([str(python), "-c", LOOKUP], cwd="/tmp", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_throwaway_environment_does_not_see_kafka_fast(tmp_path):
    python, _ = throwaway_python(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([str(python), "-c", "import kafka_fast"], cwd="/tmp", env=env,
                          capture_output=True, text=True, timeout=60)
    assert "No module named 'kafka_fast'" in done.stderr


def test_found_from_a_wheel_install(tmp_path):
    python, site = throwaway_python(tmp_path)
    for name in PACKAGES:  # what installing the wheel puts in site-packages
        shutil.copytree(ROOT / name, site / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.c", "build"))
    got = lookup(python)
    assert "kafka_fast" in got["names"]
    assert got["module"] == str(site / "pyspark_kafka_fast" / "__init__.py")
    assert str(ROOT) not in got["path"]


def editable_files() -> dict[str, str]:
    """The files setuptools' editable install of this project puts in site-packages (its
    own strategy, as ``pip install -e .`` picks it, without building the extensions)."""
    script = """
import json, os
from distutils.core import run_setup
from setuptools.command.editable_wheel import editable_wheel
dist = run_setup("setup.py", stop_after="config")
cmd = editable_wheel(dist)
cmd.ensure_finalized()
cmd.project_dir = os.getcwd()
cmd.package_dir = dist.package_dir or {}
class Wheel:
    files = {}
    def writestr(self, name, data):
        self.files[name] = data if isinstance(data, str) else data.decode()
wheel = Wheel()
cmd._select_strategy("kafka_fast", "0.1.0", "build/lib")(wheel, [], {})
print(json.dumps(wheel.files))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_found_from_an_editable_install(tmp_path):
    files = editable_files()
    python, site = throwaway_python(tmp_path)
    for name, text in files.items():
        (site / name).write_text(text)
    got = lookup(python)
    assert "kafka_fast" in got["names"], (sorted(files), got)
    assert got["module"] == str(ROOT / "pyspark_kafka_fast" / "__init__.py")


def test_found_from_py_files_zip(tmp_path):
    archive = tmp_path / "deps.zip"  # spark-submit --py-files deps.zip: on the worker's path
    with zipfile.ZipFile(archive, "w") as zf:
        for name in PACKAGES:
            for path in (ROOT / name).rglob("*.py"):
                zf.write(path, path.relative_to(ROOT))
    python, _ = throwaway_python(tmp_path)
    got = lookup(python, {"PYTHONPATH": str(archive)})
    assert "kafka_fast" in got["names"]
    assert got["module"] == str(archive / "pyspark_kafka_fast" / "__init__.py")
    assert str(ROOT) not in got["path"]
