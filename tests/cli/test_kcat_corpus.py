"""kcat's command lines with ``kafka-fast`` in front: every line of kcat_corpus.txt is run
through kcat and through kafka-fast against the same records on Apache Kafka, and stdout
(byte for byte, normalised only where the corpus says so) and the exit status compared."""

from __future__ import annotations

import os
import re
import shlex
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from clirun import kf, need_kcat
from harness import create_topic, unique_topic

CORPUS = Path(__file__).with_name("kcat_corpus.txt")
T0 = 1_700_000_000_000

#: The stdin of each produce line (``readback:NAME``).
INPUTS = {
    "lines": b"one\ntwo\n\nthree\r\nfour",
    "keyed": b"k1:v1\n:v2\nk3:\nnokey\nk5:a:b\nk6:\xff\x00\n",
    "hashed": b"".join(b"key%d:value %d\n" % (i, i) for i in range(30)),
    "semicolon": b"a;b;;c\n;",
    "records": b"k1\x1fv1\x1ek2\x1fv\n2\x1e\x1fonly value\x1e",
    "none": b"",
}


@dataclass
class Line:
    name: str
    compare: str
    words: list[str]


def load_corpus() -> list[Line]:
    lines = []
    for raw in CORPUS.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        name, compare, args = (part.strip() for part in raw.split("|", 2))
        lines.append(Line(name, compare, shlex.split(args)))
    return lines


LINES = load_corpus()


def t1_records() -> list[tuple]:
    """(key, value, headers) of {t1}'s twelve records, offsets 0-11, timestamps T0 + n s."""
    fixed = [
        (b"alpha", b"one", [("h1", b"v1")]),
        (None, b"no key", []),
        (b"", b"", [("e", b"")]),
        (b"k\xff", b'bin\x00\x01\xfe"\\/\n\ttab \xc3\xa9', [("h1", b"a"), ("h2", None),
                                                          ("h1", b"dup")]),
        (b"nullval", None, []),
        (b"k5", b"%s %k 100%", []),
        (struct.pack(">i", -7), struct.pack(">hQ", 3, 2**63 + 5) + b"tail", []),
    ]
    return fixed + [(f"key{i}".encode(), f"value {i}".encode(), [("n", str(i).encode())])
                    for i in range(7, 12)]


def t3_records() -> list[tuple]:
    """(partition, key, value, headers) of {t3}'s 24 records: record i in partition i % 3,
    timestamp T0 + i s, every fourth with a null key."""
    return [(i % 3, None if i % 4 == 0 else f"k{i}".encode(), f"v{i}".encode(),
             [("i", str(i).encode())] if i % 2 else []) for i in range(24)]


def _produce(broker, topic: str, rows: list[tuple]) -> None:
    from confluent_kafka import Producer

    producer = Producer(broker.client_config({"linger.ms": 5}))
    errors: list = []
    for i, (partition, key, value, headers) in enumerate(rows):
        producer.produce(topic, key=key, value=value, headers=headers or None,
                         partition=partition, timestamp=T0 + i * 1000,
                         on_delivery=lambda err, _m: err and errors.append(err))
    assert producer.flush(30) == 0 and not errors, errors


@pytest.fixture(scope="module")
def corpus_setup(apache_kafka, tmp_path_factory) -> dict[str, str]:
    broker = apache_kafka
    t1, t3 = unique_topic("kcat-t1"), unique_topic("kcat-t3")
    create_topic(broker, t1, 1)
    create_topic(broker, t3, 3)
    _produce(broker, t1, [(0, k, v, h) for k, v, h in t1_records()])
    _produce(broker, t3, t3_records())
    home = tmp_path_factory.mktemp("kcat-home")
    (home / "kcat.conf").write_text(f"# brokers\nbootstrap.servers={broker.bootstrap}\n")
    (home / "lines.txt").write_bytes(b"l1\nl2\n\nl3")
    (home / "file1.bin").write_bytes(b"file one\ncontent\n")
    (home / "file2.bin").write_bytes(b"\x00\x01binary\xff")
    values = {"b": broker.bootstrap, "t1": t1, "t3": t3, "conf": str(home / "kcat.conf"),
              "lines": str(home / "lines.txt"), "file1": str(home / "file1.bin"),
              "file2": str(home / "file2.bin"), "home": str(home)}
    values.update({f"T{n}": str(T0 + n * 1000) for n in range(100)})
    return values


def _fill(words: list[str], values: dict[str, str]) -> list[str]:
    return [re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], w) for w in words]


def _env(values: dict[str, str]) -> dict[str, str]:
    """The same environment for both: a HOME without a kcat.conf, no KCAT_CONFIG."""
    env = {k: v for k, v in os.environ.items() if k not in ("KCAT_CONFIG", "KAFKACAT_CONFIG")}
    env["HOME"] = values["home"]
    return env


def _own_topics(out: bytes, names: set[str]) -> bytes:
    """-L text keeping only the blocks of ``names`` (sorted), with their count."""
    lines = out.decode().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if re.match(r" \d+ topics:", line))
    blocks: list[list[str]] = []
    for line in lines[at + 1:]:
        if line.startswith("  topic "):
            blocks.append([line])
        else:
            blocks[-1].append(line)
    kept = sorted((b for b in blocks if b[0].split('"')[1] in names), key=lambda b: b[0])
    return "".join(lines[:at] + [f" {len(kept)} topics:\n"] + [x for b in kept for x in b]
                   ).encode()


def _read_all(broker, topic: str) -> list[tuple]:
    """Every record of ``topic`` (3 partitions) as (partition, offset, key, value, headers)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(broker.client_config({
        "group.id": f"readback-{topic}", "enable.auto.commit": False,
        "enable.partition.eof": True, "fetch.wait.max.ms": 100}))
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
        got, ended = [], set()
        deadline = time.monotonic() + 30
        while len(ended) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                ended.add(msg.partition())
                continue
            got.append((msg.partition(), msg.offset(), msg.key(), msg.value(),
                        list(msg.headers() or [])))
        assert len(ended) == 3, f"{topic}: only partitions {ended} read to their end"
        return sorted(got)
    finally:
        consumer.close()


def _run_both(kcat: str, words: list[str], values: dict[str, str], per_client: dict,
              stdin: bytes | None) -> tuple[subprocess.CompletedProcess, ...]:
    results = []
    for tool in ("kcat", "kafka-fast"):
        args = _fill(words, {**values, **per_client[tool]})
        if tool == "kcat":
            done = subprocess.run([kcat, *args], input=stdin, capture_output=True,
                                  timeout=120, env=_env(values))
        else:
            done = kf(*args, stdin=stdin, env=_env(values))
        results.append(done)
    return tuple(results)


@pytest.mark.parametrize("line", LINES, ids=[line.name for line in LINES])
def test_kcat_command_line_gives_kcats_output(line: Line, corpus_setup, apache_kafka, kcat):
    kcat = need_kcat(kcat)
    values = corpus_setup
    per_client = {tool: {"out": unique_topic(f"kcat-out-{tool}"),
                         "group": unique_topic(f"kcat-group-{tool}")}
                  for tool in ("kcat", "kafka-fast")}
    stdin = None
    if line.compare.startswith("readback:"):
        stdin = INPUTS[line.compare.partition(":")[2]]
        for tool in per_client:
            create_topic(apache_kafka, per_client[tool]["out"], 3)
    theirs, ours = _run_both(kcat, line.words, values, per_client, stdin)
    said = f"kcat: {theirs.stderr!r}\nkafka-fast: {ours.stderr!r}"
    assert ours.returncode == theirs.returncode, said
    expected, got = theirs.stdout, ours.stdout
    if line.compare == "sorted":
        expected, got = sorted(expected.splitlines()), sorted(got.splitlines())
    elif line.compare == "own-topics":
        names = {values["t1"], values["t3"]}
        expected, got = _own_topics(expected, names), _own_topics(got, names)
    assert got == expected, said
    if line.compare == "status":
        assert theirs.returncode == 1 and not theirs.stdout
    elif line.compare.startswith("readback:"):
        assert theirs.returncode == 0, said
        records = [_read_all(apache_kafka, per_client[tool]["out"]) for tool in per_client]
        assert records[1] == records[0] and records[0], said
    else:
        assert theirs.returncode == 0 and theirs.stdout or line.name.endswith("end"), said


@pytest.mark.parametrize("where", ["home", "KCAT_CONFIG"])
def test_configuration_file_found_where_kcat_finds_it(where, corpus_setup, tmp_path, kcat):
    kcat = need_kcat(kcat)
    conf = tmp_path / ".config" / "kcat.conf" if where == "home" else tmp_path / "any.conf"
    conf.parent.mkdir(exist_ok=True)
    conf.write_text(f"bootstrap.servers={corpus_setup['b']}\n")
    env = _env({"home": str(tmp_path)})
    if where == "KCAT_CONFIG":
        env["KCAT_CONFIG"] = str(conf)
    args = ["-C", "-t", corpus_setup["t1"], "-e", "-q", "-f", "%o %k\\n"]
    theirs = subprocess.run([kcat, *args], capture_output=True, timeout=120, env=env)
    ours = kf(*args, env=env)
    assert theirs.returncode == ours.returncode == 0, (theirs.stderr, ours.stderr)
    assert ours.stdout == theirs.stdout
    assert ours.stdout.splitlines()[:3] == [b"0 alpha", b"1 ", b"2 "]


def test_the_docs_give_the_corpus_size():
    with open(Path(__file__).parents[2] / "docs" / "cli.md", encoding="utf-8") as fh:
        assert f"holds {len(LINES)} kcat command lines" in " ".join(fh.read().split())


def test_listing_a_topic_does_not_create_it(corpus_setup, apache_kafka):
    from confluent_kafka.admin import AdminClient

    topic = unique_topic("kcat-absent")
    for _ in range(2):
        done = kf("-L", "-b", corpus_setup["b"], "-t", topic, env=_env(corpus_setup))
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == (
            f'  topic "{topic}" with 0 partitions: Broker: Unknown topic or partition'.encode())
    listed = AdminClient(apache_kafka.client_config()).list_topics(timeout=30).topics
    assert topic not in listed and corpus_setup["t1"] in listed
