"""Type checkers see the public API: the names ``kafka_fast`` loads lazily (through its
``TYPE_CHECKING`` imports) and the compiled modules (through the ``.pyi`` stubs next to their
``.pyx``). mypy checks a snippet of user code that must pass, and lines that must be refused;
stubtest compares the stubs with the built modules."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from harness.peers import missing

ROOT = Path(__file__).resolve().parents[2]
NATIVE_MODULES = ("_native._columns", "_native._crc32c", "_native._fetchwire", "_native._message",
                  "_native._partition", "_native._producewire", "_native._records", "_native._sockio",
                  "producer._produce", "producer._routing")

GOOD = """\
from kafka_fast import (AdminClient, Consumer, KafkaError, Producer, SerializingProducer,
                        TopicPartition, crc32c)
from kafka_fast.aio import AsyncDeserializingConsumer, AsyncSerializingProducer
from kafka_fast.records import Record, decode_batches, encode_batch

p = Producer({"bootstrap.servers": "localhost:9092"})
left: int = p.flush(1.0)
queued: int = len(p)
reveal_type(p.produce_batch)
c = Consumer({"bootstrap.servers": "localhost:9092", "group.id": "g"})
reveal_type(c.poll(1.0))
c.assign([TopicPartition("t", 0, 5)])
admin = AdminClient({"bootstrap.servers": "localhost:9092"})
reveal_type(admin.list_topics())
sp: Producer = SerializingProducer({"bootstrap.servers": "localhost:9092"})
code: int = KafkaError.NOT_COORDINATOR
checksum: int = crc32c(b"123456789")
data: bytes = encode_batch([b"v"], [b"k"], compression="lz4")
for batch in decode_batches(data):
    reveal_type(batch)
    records: list[Record] = batch.records()
    first: int = records[0].offset


async def asyncio_clients() -> None:
    asp = await AsyncSerializingProducer({"bootstrap.servers": "localhost:9092"})
    reveal_type(asp)
    await asp.produce("t", key="k", value=1, partition=0)
    async with await AsyncDeserializingConsumer({"bootstrap.servers": "localhost:9092",
                                                 "group.id": "g"}) as adc:
        reveal_type(await adc.poll(1.0))
"""

#: Each line must be refused (one error at least), the reason in the comment.
BAD = """\
from kafka_fast import Consumer, Producer, crc32c
from kafka_fast.aio import AsyncSerializingProducer
from kafka_fast.records import encode_batch

p = Producer({"bootstrap.servers": "localhost:9092"})
left: str = p.flush()  # flush() returns an int
p.produce_batch()  # the topic is required
c = Consumer({"group.id": "g"})
c.no_such_method()  # Consumer has no such attribute
c.poll("soon")  # the timeout is a float
crc32c(b"data", "0")  # the stub: the start value is an int
n: int = encode_batch([b"v"])  # the stub: bytes, not int
AsyncSerializingProducer(["bootstrap.servers"])  # the configuration is a mapping
"""


def _mypy_or_skip() -> None:
    try:
        import mypy  # noqa: F401
    except ImportError:
        missing("mypy", "the test extras (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory) -> Path:
    """One mypy cache for this module's runs (same options): kafka_fast is analysed once."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(tmp_path: Path, source: str, cache: Path) -> list[str]:
    """mypy (strict) on ``source`` as user code; its messages about that file only."""
    snippet = tmp_path / "snippet.py"
    snippet.write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--strict", "--follow-imports=silent", "--no-error-summary",
         "--cache-dir", str(cache), str(snippet)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith(str(snippet))]
    assert done.returncode in (0, 1) and (done.returncode == 0) == (
        not any(": error:" in line for line in lines)), done.stdout + done.stderr
    return [line[len(str(snippet)) + 1:] for line in lines]


def test_public_api_type_checks(tmp_path, mypy_cache):
    _mypy_or_skip()
    out = _mypy(tmp_path, GOOD, mypy_cache)
    errors = [line for line in out if ": error:" in line]
    assert not errors, "\n".join(out)
    notes = {int(line.split(":")[0]): line for line in out if "Revealed type" in line}
    lines = GOOD.splitlines()

    def revealed(text: str) -> str:
        return notes[lines.index(text) + 1]

    # (mypy versions differ in spelling: ``builtins.str`` or ``str``, ``X | None`` or
    # ``Union[X, None]``.)
    assert re.search(r"def \(topic: (builtins\.)?str, .*\) -> (builtins\.)?int",
                     revealed("reveal_type(p.produce_batch)"))
    poll = revealed("reveal_type(c.poll(1.0))")
    assert "kafka_fast.message.Message" in poll and "None" in poll
    assert "kafka_fast.cluster.listing.ClusterMetadata" in revealed(
        "reveal_type(admin.list_topics())")
    batch = revealed("    reveal_type(batch)")
    assert "kafka_fast._native._records.RecordBatch" in batch
    assert "kafka_fast._native._records._LegacyRecordBatch" in batch
    # awaiting the asyncio serializing clients' construction gives the client
    assert "kafka_fast.aio.serializing_producer.AsyncSerializingProducer" in revealed(
        "    reveal_type(asp)")
    polled = revealed("        reveal_type(await adc.poll(1.0))")
    assert "kafka_fast.message.Message" in polled and "None" in polled


def test_wrong_usage_is_refused(tmp_path, mypy_cache):
    _mypy_or_skip()
    out = _mypy(tmp_path, BAD, mypy_cache)
    refused = {int(line.split(":")[0]) for line in out if ": error:" in line}
    expected = {n for n, line in enumerate(BAD.splitlines(), 1) if "  # " in line}
    assert refused == expected, "\n".join(out)


def test_every_lazy_export_is_visible_to_type_checkers():
    """Each name ``kafka_fast.__getattr__`` loads has a matching ``TYPE_CHECKING`` import."""
    tree = ast.parse((ROOT / "kafka_fast" / "__init__.py").read_text())
    imported: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom)
                for alias in stmt.names:
                    assert alias.asname == alias.name, "re-export as `X as X`"
                    imported[alias.name] = f"kafka_fast{'.' + stmt.module if stmt.module else ''}"
    import kafka_fast

    lazy = {name: module for name, (module, _) in kafka_fast._LAZY.items()}
    assert imported == lazy


def test_stubs_match_the_compiled_modules(tmp_path):
    _mypy_or_skip()
    from kafka_fast import records

    if not records.NATIVE:
        pytest.skip("the compiled modules are not built (or KAFKA_FAST_NO_EXTENSIONS is set)")
    # Only the stubs are judged here: what they import is read but not reported on.
    config = tmp_path / "stubtest.ini"
    config.write_text("[mypy]\nfollow_imports = silent\nignore_missing_imports = True\n")
    done = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--concise", "--mypy-config-file", str(config),
         *(f"kafka_fast.{name}" for name in NATIVE_MODULES)],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    # Cython's pickling helpers, __test__ dict and table of C functions for other compiled
    # modules (__pyx_capi__) are not part of the interface; PEP 800 (@disjoint_base) markers
    # are not used in these stubs.
    noise = re.compile(r"__reduce_cython__|__setstate_cython__|\.__test__ |\.__pyx_capi__ "
                       r"|disjoint base")
    problems = [line for line in (done.stdout + done.stderr).splitlines()
                if line.strip() and not noise.search(line)]
    assert not problems, textwrap.indent(done.stdout + done.stderr, "  ")
