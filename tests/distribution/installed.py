"""An installed kafka_fast in a fresh virtualenv, checked from outside: which distributions the
install pulled, and a smoke run (round trip, pure mode, ``kafka-fast bench``) on a real broker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from harness.brokers import Broker
from harness.topics import create_topic, unique_topic

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import build_wheels  # noqa: E402

#: kafka_fast's runtime dependencies (pyproject's ``dependencies``), no extras.
RUNTIME = {"numpy", "lz4", "zstandard", "python-snappy"}
COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "x86_64-linux-gnu-gcc")
#: The kafka_fast rows ``kafka-fast bench --against none`` measures.
BENCH_PATHS = ("kafka_fast produce()", "kafka_fast produce_batch",
               "kafka_fast AIOProducer.produce()", "kafka_fast poll()",
               "kafka_fast consume(10000)", "kafka_fast consume_batch")

_CLOSURE = """
import importlib.metadata as md, json
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name as canon
seen, todo = set(), ["kafka_fast"]
while todo:
    name = canon(todo.pop())
    if name not in seen:
        seen.add(name)
        for text in md.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
print(json.dumps(sorted(seen)))
"""
_INSTALLED = ("import importlib.metadata as md, json; print(json.dumps(sorted("
              "{d.metadata['Name'].lower().replace('_', '-') for d in md.distributions()})))")


def canon(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


class FreshVenv:
    """A virtualenv of ``python`` under ``folder``, run with PYTHONPATH unset. Unless
    ``compiler`` is set its commands see no compiler: PATH holds only the venv's bin and an
    empty folder, and CC/CXX are /bin/false."""

    def __init__(self, python: str, folder: Path, compiler: bool = False) -> None:
        self.dir = folder / "venv"
        self.cwd = folder
        subprocess.run([python, "-m", "venv", str(self.dir)], check=True, capture_output=True)
        self.python = str(self.dir / "bin" / "python")
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "PYTHONHOME", "KAFKA_FAST_NO_EXTENSIONS",
                                 "VIRTUAL_ENV")}
        if compiler:
            return
        empty = folder / "no-compiler"
        empty.mkdir()
        path = os.pathsep.join([str(self.dir / "bin"), str(empty)])
        for tool in COMPILERS:
            assert shutil.which(tool, path=path) is None, f"{tool} on the test PATH"
        self.env.update(PATH=path, CC="/bin/false", CXX="/bin/false")

    def run(self, *cmd: str, extra_env: dict[str, str] | None = None,
            timeout: float = 600) -> str:
        """Run ``cmd`` in the venv's environment; its stdout (failure shows both streams)."""
        done = subprocess.run(cmd, cwd=self.cwd, env={**self.env, **(extra_env or {})},
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, (f"{cmd} failed:\n{done.stdout[-3000:]}\n"
                                      f"{done.stderr[-3000:]}")
        return done.stdout

    def distributions(self) -> set[str]:
        return set(json.loads(self.run(self.python, "-c", _INSTALLED)))

    def install(self, artifact: Path) -> set[str]:
        """pip install ``artifact``; the distributions that came with it."""
        before = self.distributions()
        self.run(self.python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 str(artifact), timeout=900)
        return self.distributions() - before

    def requires_closure(self) -> set[str]:
        """kafka_fast and everything its Requires-Dist pull in (no extras), as installed."""
        return {canon(n) for n in json.loads(self.run(self.python, "-c", _CLOSURE))}


    def install_test_tools(self, folder: Path) -> None:
        """Install what the core tests need (TEST_TOOLS) from the wheels in ``folder`` only,
        after the runtime dependencies were checked."""
        self.run(self.python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                 "--no-index", "--find-links", str(folder), *TEST_TOOLS, timeout=300)


#: What the core test files need beside kafka_fast: pytest, and the harness's reference
#: client (confluent-kafka) and TLS files (cryptography).
TEST_TOOLS = ("pytest", "pytest-timeout", "confluent-kafka", "cryptography")
#: The core test set run with each installed wheel. Without a broker: the record engine
#: (compiled and pure, headers, column builders), every protocol message at every version and
#: its exact bytes, the request API, partitioners, delivery messages, the producer's API, the
#: assignors and fetch decoding. On the broker: exact records produced with every codec and
#: read back, a consumer group, a transaction committed and aborted.
CORE_TESTS = (
    "tests/core/test_records_basic.py",
    "tests/core/test_headers.py",
    "tests/core/test_columns_twins.py",
    "tests/protocol/test_roundtrip.py",
    "tests/protocol/test_exact_bytes.py",
    "tests/protocol/test_api.py",
    "tests/producer/test_partitioners.py",
    "tests/producer/test_delivery_messages.py",
    "tests/producer/test_api.py",
    "tests/consumer/test_assignors.py",
    "tests/consumer/test_fetch_decode.py",
    "tests/producer/test_roundtrip.py::test_round_trip_every_field_and_codec",
    "tests/consumer/test_roundtrip.py::test_subscribe_and_consume_read_exact_records",
    "tests/transactions/test_producer.py::test_commit_abort_commit",
)
#: Left out of the core set (node id prefixes): a batch read as an Arrow table (pyarrow, the
#: optional ``arrow`` extra, is not in the wheel's venv) and a batch's CRC checked with
#: google-crc32c (the CRC is checked against the protocol's bytes in the rest of the set).
CORE_DESELECT = (
    "tests/core/test_records_basic.py::test_layout_matches_spec",
    "tests/consumer/test_fetch_decode.py::test_batch_view_over_decoded_segments_matches_the_records",
)


def tool_wheels(python: str, version: str) -> Path:
    """TEST_TOOLS' wheels for ``python``, downloaded once into the cache (the venvs then
    install them without asking the package index)."""
    folder = build_wheels.cache_dir() / "test-wheels" / f"cp{version.replace('.', '')}"
    done = folder / ".complete"
    if not done.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([python, "-m", "pip", "download", "-q", "--disable-pip-version-check",
                        "--only-binary", ":all:", "-d", str(folder), *TEST_TOOLS],
                       check=True, capture_output=True, timeout=900)
        done.touch()
    return folder


def core_tests(venv: FreshVenv, broker: Broker) -> tuple[str, dict]:
    """Run CORE_TESTS with the venv's Python and its installed kafka_fast against ``broker``
    (as an external cluster: no broker of their own), from the venv's folder, outside the
    checkout; pytest's summary line and run_core.py's report (which kafka_fast served)."""
    out = venv.run(venv.python, str(HERE / "run_core.py"), "-q", "-p", "no:cacheprovider",
                   "-o", "addopts=", "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
                   *(str(ROOT / t) for t in CORE_TESTS),
                   *(arg for t in CORE_DESELECT for arg in ("--deselect", t)),  # rootdir-relative ids
                   extra_env={"KAFKA_BOOTSTRAP": broker.bootstrap, "CI": ""}, timeout=900)
    lines = out.strip().splitlines()
    return lines[-2], json.loads(lines[-1])


def wheel_requires(wheel: Path) -> set[str]:
    """The names in the wheel's Requires-Dist lines that hold without an extra."""
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        lines = zf.read(meta).decode().splitlines()
    names = set()
    for line in lines:
        if line.startswith("Requires-Dist:") and "extra ==" not in line:
            spec = line.split(":", 1)[1].split(";")[0].strip()
            names.add(canon(spec.split("[")[0].split("<")[0].split(">")[0].split("=")[0]
                            .split("!")[0].split("~")[0].strip()))
    return names


def smoke(venv: FreshVenv, broker: Broker, version: str, compiled: bool = True) -> None:
    """Round trip compiled (unless ``compiled`` is False: the core tests' round trips show
    it), round trip pure, and ``kafka-fast bench``, on ``broker``."""
    from smoke import expected

    for pure, native in (("", True), ("1", False))[0 if compiled else 1:]:
        topic = unique_topic("wheel")
        create_topic(broker, topic)
        out = venv.run(venv.python, str(HERE / "smoke.py"), broker.bootstrap, topic,
                       extra_env={"KAFKA_FAST_NO_EXTENSIONS": pure} if pure else None)
        result = json.loads(out.strip().splitlines()[-1])
        assert result["python"] == version
        assert result["native"] is native, f"KAFKA_FAST_NO_EXTENSIONS={pure!r}"
        assert result["records"] == expected(topic)
    table = venv.run(str(venv.dir / "bin" / "kafka-fast"), "bench", "--records", "20000",
                     "--bootstrap", broker.bootstrap, "--against", "none", "--partitions", "1")
    for label in BENCH_PATHS:
        rows = [line for line in table.splitlines() if label + " " in line]
        assert rows and "ERROR" not in rows[0], f"{label} missing or failed:\n{table}"
    assert "ERROR" not in table, table


def find_python(version: str) -> str | None:
    return build_wheels.find_python(version)
