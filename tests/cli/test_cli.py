"""The kafka-fast command, run as a real process against a real broker."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time

import pytest
from harness import create_topic, unique_topic


def kf(*args: str, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_fast", *args], input=stdin,
                          capture_output=True, timeout=timeout)


def props(broker) -> list[str]:
    out = []
    for key, value in broker.client_config().items():
        if key != "bootstrap.servers":
            out += ["-X", f"{key}={value}"]
    return out


def test_produce_a_file_then_consume_it_back(kafka, tmp_path):
    topic = unique_topic("cli")
    create_topic(kafka, topic, 1)
    lines = [f"key{i}:value number {i}" for i in range(500)]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    done = kf("produce", "-b", kafka.bootstrap, *props(kafka), "-t", topic, "-K", ":",
              "-H", "source=cli", "-z", "lz4", "--json", "-l", str(src))
    assert done.returncode == 0, done.stderr.decode()
    summary = json.loads(done.stdout)["produced"]
    assert summary["records"] == 500 and summary["delivered"] == 500 and summary["failed"] == 0
    got = kf("consume", "-b", kafka.bootstrap, *props(kafka), "-t", topic, "-e",
             "-f", "%k|%s|%h|%p|%o\\n")
    assert got.returncode == 0, got.stderr.decode()
    rows = got.stdout.decode().splitlines()
    assert rows == [f"key{i}|value number {i}|source=cli|0|{i}" for i in range(500)]


def test_json_lines_round_trip(kafka):
    topic = unique_topic("cli-json")
    create_topic(kafka, topic, 1)
    records = [{"key": f"k{i}", "value": {"n": i}, "headers": {"h": str(i)}} for i in range(20)]
    records.append({"key": None, "value": None})
    data = "\n".join(json.dumps(r) for r in records).encode() + b"\n"
    done = kf("produce", "-b", kafka.bootstrap, *props(kafka), "-t", topic, "--format", "json",
              stdin=data)
    assert done.returncode == 0, done.stderr.decode()
    got = kf("consume", "-b", kafka.bootstrap, *props(kafka), "-t", topic, "-e",
             "--format", "json")
    assert got.returncode == 0, got.stderr.decode()
    out = [json.loads(line) for line in got.stdout.decode().splitlines()]
    assert [(o["key"], o["value"], o["headers"], o["offset"]) for o in out] == [
        (f"k{i}", json.dumps({"n": i}, separators=(",", ":")), [["h", str(i)]], i)
        for i in range(20)] + [(None, None, [], 20)]


def test_offset_minus_n_gives_the_last_n(kafka):
    topic = unique_topic("cli-tail")
    create_topic(kafka, topic, 1)
    data = "".join(f"line {i}\n" for i in range(100)).encode()
    assert kf("produce", "-b", kafka.bootstrap, *props(kafka), "-t", topic,
              stdin=data).returncode == 0
    got = kf("consume", "-b", kafka.bootstrap, *props(kafka), "-t", topic, "-o", "-7", "-e")
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.decode().splitlines() == [f"line {i}" for i in range(93, 100)]
    got = kf("consume", "-b", kafka.bootstrap, *props(kafka), "-t", topic, "-o", "40", "-c", "3")
    assert got.stdout.decode().splitlines() == ["line 40", "line 41", "line 42"]


def test_topics_create_list_describe_delete(kafka):
    topic = unique_topic("cli-admin")
    base = ["-b", kafka.bootstrap, *props(kafka)]
    made = kf("topics", "create", *base, topic, "-P", "3")
    assert made.returncode == 0, made.stderr.decode()
    listed = kf("topics", "list", *base, "--json")
    assert topic in json.loads(listed.stdout)
    described = kf("topics", "describe", *base, "--json", topic)
    (row,) = json.loads(described.stdout)
    assert [p["partition"] for p in row["partitions"]] == [0, 1, 2]
    assert all(p["leader"] >= 0 for p in row["partitions"])
    meta = json.loads(kf("metadata", *base, "--json").stdout)
    assert meta["brokers"] and any(t["topic"] == topic for t in meta["topics"])
    again = kf("topics", "create", *base, topic)
    assert again.returncode == 1
    assert b"TOPIC_ALREADY_EXISTS" in again.stderr and len(again.stderr.splitlines()) == 1
    gone = kf("topics", "delete", *base, topic)
    assert gone.returncode == 0, gone.stderr.decode()
    deadline = time.monotonic() + 20
    while topic in json.loads(kf("topics", "list", *base, "--json").stdout):
        assert time.monotonic() < deadline, "deleted topic still listed"
        time.sleep(0.5)


def test_wrong_bootstrap_fails_in_one_line_within_the_timeout():
    start = time.monotonic()
    done = kf("produce", "-b", "127.0.0.1:1", "-t", "x", "--timeout", "3", stdin=b"a\n")
    elapsed = time.monotonic() - start
    assert done.returncode == 1
    err = done.stderr.decode().strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("kafka-fast produce: ")
    assert elapsed < 20
    topics = kf("topics", "list", "-b", "127.0.0.1:1", "--timeout", "2")
    assert topics.returncode == 1 and len(topics.stderr.splitlines()) == 1


@pytest.mark.parametrize("args, fragment", [
    (["consume", "-b", "x:1", "-t", "t", "-o", "soon"], b"-o expects"),
    (["produce", "-b", "x:1", "-t", "t", "-H", "=novalue"], b"-H expects NAME=VALUE"),
    (["produce", "-b", "x:1", "-t", "t", "-X", "no.such.key=1"], b'"no.such.key"'),
    (["bench", "--compression", "brotli"], b"unknown brotli"),
])
def test_bad_arguments_are_one_line_errors(args, fragment):
    done = kf(*args, stdin=b"a\n", timeout=60)
    assert done.returncode in (1, 2)
    assert fragment in done.stderr and b"Traceback" not in done.stderr


def test_bench_on_the_embedded_broker_writes_a_chart(tmp_path):
    chart = tmp_path / "bench.png"
    done = kf("bench", "--records", "20000", "--against", "confluent", "--plot", str(chart),
              "--compression", "none,lz4", "--json", timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    rows = json.loads(done.stdout)
    paths = {(r["direction"], r["client"], r["path"]) for r in rows}
    for codec in ("none", "lz4"):
        assert ("produce", "kafka_fast", f"produce_batch [{codec}]") in paths
        assert ("consume", "confluent", f"consume(10000) [{codec}]") in paths
    assert all(r["records"] == 20000 and not r["error"] for r in rows)
    head = chart.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width > 400 and height > 200
