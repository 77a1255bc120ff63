"""What the kafka-fast command says and does around the records: per-topic reports, bad input,
summaries, properties files, closed pipes, unreachable brokers, offsets, help."""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest
from clirun import base, kf, kf_popen, produce_confluent
from harness import create_topic, unique_topic
from readback import read_confluent

from kafka_fast.cli.serdes import pack_deserializer


def _said(stderr: bytes) -> list[str]:
    """The lines of ``stderr`` without the progress line a slow first connection prints (a
    loaded machine may take over a second to connect to a broker that is up)."""
    return [line for line in stderr.decode().splitlines()
            if not (line.startswith("% waiting for ") and "to answer" in line)]


def test_topics_delete_reports_each_topic(kafka):
    d1, d2, missing = unique_topic("d1"), unique_topic("d2"), unique_topic("missing")
    create_topic(kafka, d1, 1)
    create_topic(kafka, d2, 1)
    done = kf("topics", "delete", *base(kafka), d1, missing, d2)
    assert done.returncode == 1
    assert sorted(done.stdout.decode().splitlines()) == sorted([f"deleted {d1}",
                                                                f"deleted {d2}"])
    (line,) = _said(done.stderr)
    assert line.startswith(f"kafka-fast topics delete: {missing}: not deleted: UNKNOWN_TOPIC")
    as_json = kf("topics", "delete", *base(kafka), "--json", missing)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    assert report["deleted"] == [] and list(report["failed"]) == [missing]


def test_bad_json_line_stops_and_says_what_was_delivered(broker):
    topic = unique_topic("cli-bad")
    create_topic(broker, topic, 1)
    lines = b'{"value": "a"}\n{"value": "b"}\n\n{"value": "c"}\n{"value": nope}\n{"value": "d"}\n'
    done = kf("produce", *base(broker), "-t", topic, "--format", "json", stdin=lines)
    assert done.returncode == 1
    err = done.stderr.decode().splitlines()[-1]
    assert err.startswith("kafka-fast produce: stopped at stdin line 5: not valid JSON"), err
    assert err.endswith("; 3 of the 3 records before it were delivered"), err
    assert [g.value for g in read_confluent(broker, topic, 1, 3)] == [b"a", b"b", b"c"]


def test_consume_summary_goes_to_stderr_not_into_the_records(broker):
    topic = unique_topic("cli-summary")
    create_topic(broker, topic, 1)
    produce_confluent(broker, topic, [(None, b"one", []), (None, b"two", [])])
    done = kf("consume", *base(broker), "-t", topic, "-e", "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"one\ntwo\n"
    assert json.loads(done.stderr.decode().splitlines()[-1]) == {
        "consumed": {"records": 2, "bytes": 6}}


def test_properties_file_gives_bootstrap_and_settings(broker, tmp_path):
    topic = unique_topic("cli-props")
    create_topic(broker, topic, 1)
    props = tmp_path / "client.properties"
    lines = [f"{k}={v}" for k, v in broker.client_config().items()]
    props.write_text("# kcat-style properties\n" + "\n".join(lines) + "\nclient.id=from-file\n")
    done = kf("produce", "-F", str(props), "-t", topic, "-q", stdin=b"via properties\n")
    assert done.returncode == 0, done.stderr.decode()
    got = kf("consume", "-F", str(props), "-t", topic, "-e", "-q")
    assert got.stdout == b"via properties\n"
    none = kf("consume", "-t", topic)
    assert none.returncode == 2 and b"no brokers given" in none.stderr


def test_closed_pipe_ends_quietly(broker):
    topic = unique_topic("cli-pipe")
    create_topic(broker, topic, 1)
    produce_confluent(broker, topic, [(None, b"x" * 100 + str(i).encode(), [])
                                      for i in range(3000)])
    consumer = kf_popen("consume", *base(broker), "-t", topic, "-e", stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-2"], stdin=consumer.stdout, capture_output=True,
                          timeout=60)
    consumer.stdout.close()
    assert consumer.wait(60) == 0
    err = consumer.stderr.read()
    assert err == b"", err
    assert head.stdout == b"x" * 100 + b"0\n" + b"x" * 100 + b"1\n"


def test_refused_bootstrap_fails_at_once_with_one_line():
    start = time.monotonic()
    done = kf("consume", "-b", "127.0.0.1:1", "-t", "x", "--timeout", "30")
    assert time.monotonic() - start < 15
    assert done.returncode == 1
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("kafka-fast consume: cannot connect to 127.0.0.1:1"), line
    assert "ECONNREFUSED" in line
    bad = kf("topics", "list", "-b", "no-such-host.invalid:9092", "--timeout", "30")
    assert bad.returncode == 1
    assert bad.stderr.decode().strip() == (
        "kafka-fast topics: cannot resolve any bootstrap server in "
        "'no-such-host.invalid:9092'")


def test_silent_bootstrap_fails_after_the_connection_setup_timeout():
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        done = kf("consume", "-b", address, "-t", "x", "--timeout", "60",
                  "-X", "socket.connection.setup.timeout.ms=2000")
        elapsed = time.monotonic() - start
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert lines[0] == (f"% waiting for {address} to answer (connecting, up to 2s per "
                        "attempt)")
    assert lines[-1].startswith(f"kafka-fast consume: cannot connect to {address}: "), lines
    assert "timed out" in lines[-1]
    assert elapsed < 20  # 2 s set-up time-out plus start-up, far below --timeout 60


def test_offset_end_starts_after_the_last_record(broker):
    topic = unique_topic("cli-end")
    create_topic(broker, topic, 1)
    produce_confluent(broker, topic, [(None, f"old {i}".encode(), []) for i in range(10)])
    nothing = kf("consume", *base(broker), "-t", topic, "-o", "end", "-e")
    assert nothing.returncode == 0 and nothing.stdout == b"", nothing.stdout
    in_group = kf("consume", *base(broker), "-t", topic, "-G", unique_topic("end"), "-o", "end",
                  "-e", "-q", "-X", "session.timeout.ms=6000")
    assert in_group.returncode == 0 and in_group.stdout == b"", in_group.stdout
    tail = kf("consume", *base(broker), "-t", topic, "-o", "-2", "-e", "-q")
    assert tail.stdout == b"old 8\nold 9\n"
    waiting = kf_popen("consume", *base(broker), "-t", topic, "-o", "end", "-c", "1", "-q",
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for i in range(200):
            produce_confluent(broker, topic, [(None, f"new {i}".encode(), [])])
            try:
                out, err = waiting.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            pytest.fail("consume -o end -c 1 did not see a new record")
    finally:
        waiting.kill() if waiting.poll() is None else None
    assert waiting.returncode == 0, err
    assert out.startswith(b"new ") and out.count(b"\n") == 1, out


def test_timestamp_offsets(kafka):
    """(The mock cluster answers every time look-up with -1, so it is not used here.)"""
    broker = kafka
    topic = unique_topic("cli-ts")
    create_topic(broker, topic, 1)
    stamps = [1_700_000_000_000 + 1000 * i for i in range(10)]
    produce_confluent(broker, topic, [(None, f"r{i}".encode(), []) for i in range(10)], stamps)
    got = kf("consume", *base(broker), "-t", topic, "-e", "-q", "-f", "%s %T\\n",
             "-o", f"s@{stamps[3]}", "-o", f"e@{stamps[6]}")
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.decode().splitlines() == [f"r{i} {stamps[i]}" for i in (3, 4, 5)]


def test_joining_a_group_says_so(broker):
    topic = unique_topic("cli-group")
    create_topic(broker, topic, 1)
    produce_confluent(broker, topic, [(None, b"hello", [])])
    group = unique_topic("g")
    done = kf("consume", *base(broker), "-t", topic, "-G", group, "-c", "1",
              "-X", "session.timeout.ms=6000")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b"hello\n"
    lines = _said(done.stderr)
    assert lines[0] == f"% joining group '{group}' for {topic}"
    assert lines[1].startswith(f"% joined group '{group}' after ")
    assert lines[1].endswith(f"s: assigned {topic} [0]")


@pytest.mark.parametrize("command, flags", [
    ("consume", ["-K", "-D", "-J", "-Z", "-s", "-q", "-o", "-f", "-e", "-c", "-G", "-F", "-X"]),
    ("produce", ["-K", "-k", "-D", "-Z", "-l", "-H", "-z", "-c", "-q", "-F", "-X"]),
])
def test_help_lists_the_kcat_flags(command, flags):
    text = kf(command, "--help").stdout.decode()
    for flag in flags:
        assert f"\n  {flag} " in text or f", {flag} " in text or f"\n  {flag}," in text, flag
    assert "s@" in kf("consume", "--help").stdout.decode()
    overview = " ".join(kf("--help").stdout.decode().split())
    listed = overview.split(f"{command}: ", 1)[1].split(";")[0].split()
    common = overview.split("both: ", 1)[1].split(")")[0].split()
    assert set(flags) <= set(listed) | set(common), set(flags) - set(listed) - set(common)


def test_pack_str_byte_order():
    assert pack_deserializer("<H")(b"\x01\x02") == b"513"
    assert pack_deserializer("H")(b"\x01\x02") == b"258"
    assert pack_deserializer(">bBcs")(b"\xff\xff" + b"Ztail") == b"-1255Ztail"


def test_bench_checks_the_plot_path_before_running(tmp_path):
    start = time.monotonic()
    done = kf("bench", "--records", "1000", "--plot", str(tmp_path / "no" / "chart.png"))
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        f"kafka-fast bench: --plot {tmp_path / 'no' / 'chart.png'}: folder "
        f"{tmp_path / 'no'} does not exist")
    assert time.monotonic() - start < 20  # no broker was started, no case ran
    folder = kf("bench", "--plot", str(tmp_path))
    assert folder.returncode == 2 and b"is a directory" in folder.stderr


def test_groups_show_committed_offset_end_and_lag(broker):
    from confluent_kafka import Consumer, TopicPartition

    topic, group = unique_topic("cli-lag"), unique_topic("lag-group")
    create_topic(broker, topic, 2)
    produce_confluent(broker, topic, [(None, f"r{i}".encode(), []) for i in range(10)])
    read = kf("consume", *base(broker), "-t", topic, "-G", group, "-c", "4", "-q",
              "-X", "session.timeout.ms=6000")
    assert read.stdout == b"r0\nr1\nr2\nr3\n", read.stderr.decode()
    peer = Consumer(broker.client_config({"group.id": group}))
    try:
        (seen,) = [tp.offset for tp in peer.committed([TopicPartition(topic, 0)], timeout=20)]
    finally:
        peer.close()
    assert seen == 4
    done = kf("groups", *base(broker), "-g", group, "-t", topic, "--json")
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == [{"group": group, "state": None, "partitions": [
        {"topic": topic, "partition": 0, "committed": 4, "end": 10, "lag": 6}]}]
    text = kf("groups", *base(broker), "-g", group, "-t", topic)
    assert text.stdout.decode().splitlines() == [
        f"group {group}: 1 partitions, lag 6", f"  {topic} [0]  committed 4  end 10  lag 6"]
    listed = kf("groups", *base(broker), "--json")
    if broker.kind == "mock":  # the mock cluster has no ListGroups
        assert listed.returncode == 1
        assert listed.stderr.decode().splitlines()[-1] == (
            "kafka-fast groups: no broker listed its groups; name groups with -g")
    else:
        assert listed.returncode == 0, listed.stderr.decode()
        rows = {row["group"]: row for row in json.loads(listed.stdout)}
        assert rows[group]["partitions"] == [
            {"topic": topic, "partition": 0, "committed": 4, "end": 10, "lag": 6}]


def test_connection_setup_is_bounded_by_ten_seconds_or_the_timeout():
    from kafka_fast.cli.connect import connect_config

    for timeout, given, expected in ((30, None, 10_000), (3, None, 3000), (30, "500", "500")):
        conf = {} if given is None else {"socket.connection.setup.timeout.ms": given}
        connect_config(conf, timeout)
        assert conf["socket.connection.setup.timeout.ms"] == expected
