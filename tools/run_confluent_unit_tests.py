"""Run confluent-kafka-python's own broker-less unit tests against kafka_fast.

The test files are exported from a confluent-kafka-python repository (a git directory or
work tree, never copied into this one) into a temporary directory, next to a conftest that
makes ``import confluent_kafka`` and its submodules resolve to kafka_fast's modules. Each file
runs in its own pytest process; the outcome of every test is stored as JSON
(``docs/confluent-unit-tests.json``) and the page ``docs/confluent-unit-tests.md`` is rendered
from it, with the reason each known failure is not a user-facing gap.

    python tools/run_confluent_unit_tests.py [--repo PATH] [--fetch] [--render-only]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "confluent-unit-tests.json"
PAGE = ROOT / "docs" / "confluent-unit-tests.md"
TAG = "v2.15.0"  # the newest tag of confluent-kafka-python (the installed 2.16.1 has none)
URL = "https://github.com/confluentinc/confluent-kafka-python"
CACHE = Path.home() / ".cache" / "kafka_fast" / f"confluent-kafka-python-{TAG}"
FILE_TIMEOUT_S = 120

# Files not run at all, with the reason.
EXCLUDED = {
    "test_serializer_error.py": "needs confluent_kafka.avro (Avro serdes are not part of kafka_fast)",
    "test_unasync.py": "tests confluent-kafka-python's own code generator (tools/unasync.py)",
    "test_Wakeable.py": "sends SIGINT to the test process: whether pytest records the outcome "
                        "depends on timing",
}

# Reasons for failures that are not user-facing gaps: fnmatch patterns of "file::test".
KNOWN = [
    ("test_AIOConsumer.py::*", "imports confluent_kafka.aio._AIOConsumer, a private module"),
    ("test_AIOProducer.py::*", "imports confluent_kafka.aio.producer._AIOProducer, a private module"),
    ("test_buffer_timeout_manager.py::*",
     "tests confluent_kafka.aio.producer._buffer_timeout_manager, a private module"),
    ("test_kafka_batch_executor.py::*",
     "tests confluent_kafka.aio.producer._kafka_batch_executor, a private module"),
    ("test_producer_batch_processor.py::*",
     "tests confluent_kafka.aio.producer._producer_batch_processor, a private module"),
    ("test_log.py::*", "imports tests.common.schema_registry (confluent_kafka.schema_registry)"),
    ("test_docs.py::*", "checks confluent-kafka's docstring wording of every public name"),
    ("test_Producer.py::*", "imports confluent_kafka.avro (Avro serdes are not part of kafka_fast)"),
    ("test_Admin.py::*", "imports confluent_kafka.admin._ElectionType, a private name"),
    ("test_Messages.py::test_from_list_builds_a_batch", "calls Messages._from_list, a private method"),
    ("test_ShareConsumer_callbacks.py::test_log_cb*", "librdkafka's log lines (INIT, CONFWARN) "
     "and when its log queue drains"),
    ("test_ShareConsumer_callbacks.py::test_mixed_callbacks*", "expects librdkafka's INIT "
     "log line (debug=msg) among the records log_cb gets"),
    ("test_kafka_error.py::test_kafkaError_unknown_error", "raises a KafkaError object itself "
     "(confluent-kafka's C type passes the raise check although it is not an Exception); "
     "kafka_fast's KafkaError is a plain value, raised inside KafkaException"),
    ("test_message.py::test_message_exceptions*", "calls Message's methods on objects that are "
     "not Messages (type checks of C methods); kafka_fast's accessors are plain methods, left "
     "unchecked on the per-record path"),
    ("test_message.py::test_message_create_empty[[]empty_message_4*", "Message.__new__ without "
     "__init__: confluent-kafka's C fields read as zeros, kafka_fast's slots are unset"),
    ("test_message.py::test_message_create_empty[[]empty_message_2*", "Message(partition=-2): "
     "kafka_fast keeps a negative partition (a delivery report names the partition a record "
     "was produced to), confluent-kafka reads it as None"),
    ("test_DeserializingShareConsumer.py::test_value_failure_short_circuits_key*", "expects the "
     "value deserialized before the key (v2.15.0); confluent-kafka 2.16, like kafka_fast, "
     "deserializes the key first"),
    ("test_ShareConsumer.py::test_acknowledge_offset_rejects_out_of_range_ack_type", "expects "
     "ack_type 4 refused; kafka_fast has AcknowledgeType.RENEW (4, KIP-1222)"),
    ("test_ShareConsumer.py::test_subscribe_accepts_caret_topic_as_literal_name", "kafka_fast "
     "refuses a ^-prefixed name (no topic name can contain '^'); confluent-kafka stores it"),
    ("test_Consumer.py::test_basic_api", "seek() on an assigned partition of a topic without "
     "metadata (no broker): librdkafka refuses with _STATE, kafka_fast sets the position"),
    ("test_threads.py::test_thread_safety", "a record that fails with neither on_delivery nor "
     "error_cb is raised by kafka_fast's flush() (confluent-kafka drops the failure); the test "
     "expects only its callback's exception"),
]

# Reasons matched on the failure message (a substring), for failures of any file.
KNOWN_MESSAGES = [
    ("async def functions are not natively supported", "needs pytest-asyncio (in kafka_fast's "
     "test extra: pip install pytest-asyncio)"),
]

CONFTEST = '''"""Make confluent_kafka and its submodules resolve to kafka_fast's (alias for these tests)."""
import importlib
import importlib.abc
import importlib.util
import sys

_RENAMED = {"confluent_kafka.cimpl": "kafka_fast.cimpl"}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name != "confluent_kafka" and not name.startswith("confluent_kafka."):
            return None
        real = _RENAMED.get(name, "kafka_fast" + name[len("confluent_kafka"):])
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            raise ModuleNotFoundError(f"kafka_fast has no {real} (for {name})", name=name)
        spec = importlib.util.spec_from_loader(name, self)
        spec.loader_state = real
        return spec

    def create_module(self, spec):
        module = importlib.import_module(spec.loader_state)
        self._specs = getattr(self, "_specs", {})
        self._specs[spec.name] = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        own = self._specs.get(module.__spec__.name) if hasattr(self, "_specs") else None
        if own is not None:
            module.__spec__ = own


sys.meta_path.insert(0, _Alias())
'''


#: Local git copies of confluent-kafka-python to clone from when github.com cannot be reached
#: (neither confluent-kafka's sdist nor its wheel carries its tests):
#: ``$CONFLUENT_KAFKA_PYTHON_MIRROR``, then the path a repository mirror keeps it at.
MIRRORS = ("/work/.mirror/confluentinc+confluent-kafka-python/repo",)


def sources() -> list[str]:
    """Where the repository is cloned from, in order: github.com, then local mirrors."""
    mirrors = [os.environ.get("CONFLUENT_KAFKA_PYTHON_MIRROR") or "", *MIRRORS]
    return [URL, *(Path(m).resolve().as_uri() for m in mirrors if m and Path(m).is_dir())]


def _clone(source: str, into: Path) -> bool:
    try:
        done = subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", TAG, source,
                               str(into)], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0:
        shutil.rmtree(into, ignore_errors=True)
        return False
    return True


def repo_path(arg: str | None, fetch: bool) -> Path | None:
    """The confluent-kafka-python checkout or git directory to read, cloning it (from the
    first of ``sources()`` that answers) into the cache if asked."""
    for candidate in (arg, os.environ.get("CONFLUENT_KAFKA_PYTHON_REPO")):
        if candidate:
            return Path(candidate)
    if CACHE.exists():
        return CACHE
    if not fetch:
        return None
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    for source in sources():
        if _clone(source, CACHE):
            return CACHE
    return None


def _export(repo: Path, dest: Path) -> list[str]:
    """Write the repository's tests/ top level and tests/common into dest; the test files."""
    bare = not (repo / "tests").is_dir()
    if bare:
        ref = TAG if subprocess.run(["git", "--git-dir", str(repo), "rev-parse", "-q", "--verify",
                                     TAG], capture_output=True).returncode == 0 else "HEAD"
        names = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "-r", "--name-only", ref,
                                "tests"], capture_output=True, text=True, check=True).stdout.split()
    else:
        names = [p.relative_to(repo).as_posix() for p in (repo / "tests").rglob("*.py")]
    wanted = [n for n in names if n.endswith(".py") and (n.count("/") == 1
              or n.startswith("tests/common/"))]
    for name in wanted:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if bare:
            text = subprocess.run(["git", "--git-dir", str(repo), "show", f"{ref}:{name}"],
                                  capture_output=True, check=True).stdout
            target.write_bytes(text)
        else:
            shutil.copyfile(repo / name, target)
    (dest / "conftest.py").write_text(CONFTEST)
    return sorted(Path(n).name for n in wanted
                  if n.count("/") == 1 and Path(n).name.startswith("test_"))


def _run_file(dest: Path, name: str, tests: list[str] | None = None) -> dict[str, dict[str, str]]:
    """Run one test file (only ``tests`` if given); the outcome and message of each test."""
    report = dest / f"{name}.xml"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(dest), str(ROOT)]))
    env.pop("CI", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark",
           "-o", "addopts=", "--timeout", "20", "--rootdir", str(dest), f"--junitxml={report}",
           *([f"tests/{name}::{t}" for t in tests] if tests else [f"tests/{name}"])]
    try:
        subprocess.run(cmd, cwd=dest, env=env, capture_output=True, timeout=FILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"(file)": {"outcome": "failed", "message": f"timed out after {FILE_TIMEOUT_S} s"}}
    if not report.exists():
        return {"(file)": {"outcome": "failed", "message": "pytest wrote no report"}}
    out: dict[str, dict[str, str]] = {}
    for case in ET.parse(report).iter("testcase"):
        test = case.get("name", "")
        if not test:
            continue  # a process cut short (a signal test) leaves an unnamed record
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        key = test if cls in ("", name[:-3]) else f"{cls}::{test}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = "skipped" if child.tag == "skipped" else "failed"
                message = (child.get("message") or "").splitlines()[0][:200] if child.get(
                    "message") else ""
                break
        out[key] = {"outcome": outcome, "message": message}
    return out


def run(repo: Path, only: set[str] | None = None, jobs: int = 1) -> dict:
    """Export, run every file (or only the ``file::test`` ids in ``only``), and return the
    results document."""
    wanted: dict[str, list[str]] = {}
    for test_id in sorted(only or ()):
        name, _, test = test_id.partition("::")
        wanted.setdefault(name, []).append(test)
    with tempfile.TemporaryDirectory(prefix="cfk-unit-") as tmp:
        dest = Path(tmp)
        files = [n for n in _export(repo, dest)
                 if n not in EXCLUDED and (only is None or n in wanted)]
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(lambda n: _run_file(dest, n, wanted.get(n)), files))
    return {"tag": TAG, "files": dict(zip(files, outcomes, strict=True))}


def _reason(name: str, test: str, message: str = "") -> str:
    for pattern, reason in KNOWN:
        if fnmatch.fnmatch(f"{name}::{test}", pattern):
            return reason
    for part, reason in KNOWN_MESSAGES:
        if part in message:
            return reason
    return ""


def render(doc: dict) -> str:
    """The results page for a stored results document."""
    lines = [
        "# confluent-kafka-python's unit tests against kafka_fast",
        "",
        f"Generated by `tools/run_confluent_unit_tests.py` from `docs/confluent-unit-tests.json`: "
        f"the broker-less test files at the top of confluent-kafka-python's `tests/` "
        f"({doc['tag']}), run unchanged with `confluent_kafka` and its submodules imported "
        "from kafka_fast. Each known failure has its reason; a failure without one is a gap.",
        "",
        "| file | passed | failed | skipped |",
        "| --- | ---: | ---: | ---: |",
    ]
    failures: list[str] = []
    unexplained: list[str] = []
    for name, tests in sorted(doc["files"].items()):
        counts = {k: sum(1 for t in tests.values() if t["outcome"] == k)
                  for k in ("passed", "failed", "skipped")}
        for t, r in sorted(tests.items()):
            if r["outcome"] != "failed":
                continue
            reason = _reason(name, t, r["message"])
            if reason:
                failures.append(f"- `{name}::{t}`: {reason}")
            else:
                unexplained.append(f"- `{name}::{t}`: {r['message'] or 'failed'}")
        lines.append(f"| {name} | {counts['passed']} | {counts['failed']} | {counts['skipped']} |")
    for name in sorted(EXCLUDED):
        lines.append(f"| {name} | - | - | - |")
    lines += ["", "## Files not run", ""]
    lines += [f"- `{name}`: {reason}" for name, reason in sorted(EXCLUDED.items())]
    lines += ["", "## Each remaining failure and its reason", ""]
    lines += failures or ["None."]
    lines += ["", "## Failures without a known reason (gaps)", ""]
    lines += unexplained or ["None."]
    return "\n".join(lines) + "\n"


def passed(doc: dict) -> set[str]:
    """The tests that passed, as ``file::test``."""
    return {f"{n}::{t}" for n, tests in doc["files"].items() for t, r in tests.items()
            if r["outcome"] == "passed"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", help="confluent-kafka-python work tree or git directory")
    parser.add_argument("--fetch", action="store_true",
                        help=f"clone {TAG} into {CACHE} (from github.com or a local mirror)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to store the JSON")
    parser.add_argument("--jobs", type=int, default=2, help="files run at once")
    parser.add_argument("--render-only", action="store_true", help="only render the page")
    args = parser.parse_args(argv)
    if not args.render_only:
        repo = repo_path(args.repo, args.fetch)
        if repo is None:
            print("no confluent-kafka-python repository: pass --repo, or --fetch to clone it "
                  f"from {URL} or a local mirror (CONFLUENT_KAFKA_PYTHON_MIRROR)")
            return 2
        doc = run(repo, jobs=args.jobs)
        args.out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        if args.out != RESULTS:
            return 0
    PAGE.write_text(render(json.loads(RESULTS.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
