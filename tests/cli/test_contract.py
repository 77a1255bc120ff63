"""The command's input contract against Apache Kafka: argument bytes are taken as bytes (as
kcat takes them), numbers out of range are one-line errors naming the option, every record is
counted once in the summary, stdin is read in bounded memory, and every record goes through
produce()'s checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from clirun import ROOT, base, kf, need_kcat
from harness import create_topic, unique_topic
from harness.memory import wait_with_peak_rss
from readback import read_confluent

from kafka_fast.cli.splitter import Oversize, split_records


def _summary(done: subprocess.CompletedProcess) -> dict:
    """The --json summary a produce run printed on stdout."""
    return json.loads(done.stdout.decode().strip().splitlines()[-1])["produced"]


def _lines(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode(errors="replace").splitlines() if line]


# -- 1. argument bytes ----------------------------------------------------------------------

ARG_KEY = os.fsdecode(b"key\xff\xfe")           # not UTF-8: kept as the bytes given
ARG_HEADER = os.fsdecode(b"h=val\x80\xc3(")     # the value is not UTF-8 either
ARG_KEY_DELIM = os.fsdecode(b"\xfe")
ARG_INPUT = b"head\xfetail\nno-delimiter\n\xe9t\xe9\xfe\xff\n"


def test_non_utf8_arguments_are_stored_as_the_bytes_given_as_kcat_does(kafka, kcat):
    kcat = need_kcat(kcat)
    by_kcat, by_us = unique_topic("cli-argv-kcat"), unique_topic("cli-argv-kf")
    create_topic(kafka, by_kcat, 1)
    create_topic(kafka, by_us, 1)
    flags = ["-p", "0", "-k", ARG_KEY, "-H", ARG_HEADER, "-K", ARG_KEY_DELIM]
    subprocess.run([kcat, "-P", "-b", kafka.bootstrap, "-t", by_kcat, *flags],
                   input=ARG_INPUT, check=True, timeout=60)
    done = kf("produce", *base(kafka), "-t", by_us, "-q", *flags, stdin=ARG_INPUT)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    header = ("h", b"val\x80\xc3(")
    expected = [(b"head", b"tail", (header,)), (b"key\xff\xfe", b"no-delimiter", (header,)),
                (b"\xe9t\xe9", b"\xff", (header,))]
    theirs = [(g.key, g.value, g.headers) for g in read_confluent(kafka, by_kcat, 1, 3)]
    ours = [(g.key, g.value, g.headers) for g in read_confluent(kafka, by_us, 1, 3)]
    assert ours == expected == theirs


def test_a_header_name_that_is_not_text_is_a_one_line_error():
    done = kf("produce", "-b", "x:1", "-t", "t", "-H", os.fsdecode(b"n\xff=v"), stdin=b"a\n")
    assert done.returncode == 2
    assert _lines(done.stderr) == [
        "kafka-fast produce: -H: a header name is text (UTF-8), got b'n\\xff'"]


# -- 2. numbers out of range -----------------------------------------------------------------

@pytest.mark.parametrize("args, said", [
    (["consume", "-o", "-99999999999999999999"],
     "-o OFFSET must be between -9223372036854775807 and 9223372036854775807, "
     "got '-99999999999999999999'"),
    (["consume", "-o", "99999999999999999999"], "-o OFFSET must be between"),
    (["consume", "-o", "s@99999999999999999999"], "-o s@TIMESTAMP_MS must be between 0 and"),
    (["consume", "-o", "e@-5"], "-o e@TIMESTAMP_MS must be between 0 and 9223372036854775807"),
    (["consume", "-p", "99999999999"], "-p must be between 0 and 2147483647, got 99999999999"),
    (["consume", "-p", "-2"], "-p must be between 0 and 2147483647, got -2"),
    (["consume", "-c", "-1"], "-c must be between 0 and 9223372036854775807, got -1"),
    (["consume", "--timeout", "inf"], "--timeout must be a positive number of seconds"),
    (["consume", "--timeout", "nan"], "--timeout must be a positive number of seconds"),
    (["produce", "-c", "-1"], "-c must be between 0 and 9223372036854775807, got -1"),
    (["produce", "--timeout", "inf"], "--timeout must be a positive number of seconds"),
    (["produce", "--timeout", "0"], "--timeout must be a positive number of seconds"),
    (["topics", "list", "--timeout", "inf"], "--timeout must be a positive number of seconds"),
    (["groups", "--timeout", "-1"], "--timeout must be a positive number of seconds"),
    (["topics", "create", "t", "-P", "99999999999"],
     "-P must be between 1 and 2147483647, got 99999999999"),
    (["topics", "create", "t", "-R", "0"], "-R must be between 1 and 32767, got 0"),
])
def test_numbers_out_of_range_are_one_line_errors_naming_the_option(args, said):
    command = args[0]
    where = ["-t", "t"] if command in ("consume", "produce") else []
    done = kf(*args[:-2], "-b", "x:1", *where, *args[-2:], stdin=b"a\n", timeout=60)
    lines = _lines(done.stderr)
    assert done.returncode == 2, lines
    assert len(lines) == 1 and lines[0].startswith(f"kafka-fast {command}: {said}"), lines


# -- 3. the produce summary ------------------------------------------------------------------

def test_summary_counts_every_delivered_record_once(kafka):
    topic = unique_topic("cli-count-ok")
    create_topic(kafka, topic, 1)
    done = kf("produce", *base(kafka), "-t", topic, "--json", stdin=b"a\nbb\nccc\n")
    assert done.returncode == 0, done.stderr.decode()
    assert _summary(done) == {"records": 3, "bytes": 6, "delivered": 3, "failed": 0,
                              "first_error": None}


@pytest.mark.parametrize("count", [1, 3])
def test_summary_counts_every_refused_record_once(kafka, count):
    # A topic name Kafka refuses: every record fails by its delivery report.
    topic = "cli-bad-topic-" + "x" * 250
    stdin = b"".join(b"r%d\n" % i for i in range(count))
    done = kf("produce", *base(kafka), "-t", topic, "--json", "--timeout", "4", stdin=stdin)
    assert done.returncode == 1
    summary = _summary(done)
    assert {k: summary[k] for k in ("records", "delivered", "failed")} == {
        "records": count, "delivered": 0, "failed": count}, summary
    assert "TOPIC_EXCEPTION" in summary["first_error"]


@pytest.mark.parametrize("count", [1, 3])
def test_summary_counts_every_undelivered_record_once(fresh_mock_cluster, count):
    # Every Produce request fails with a retriable error (NOT_ENOUGH_REPLICAS): the records
    # are retried until message.timeout.ms, long after --timeout ended the wait for them.
    cluster = fresh_mock_cluster
    topic = unique_topic("cli-count-stuck")
    create_topic(cluster, topic, 1)
    cluster.push_errors(0, [19] * 2000)
    stdin = b"".join(b"r%d\n" % i for i in range(count))
    started = time.monotonic()
    done = kf("produce", *base(cluster), "-t", topic, "--json", "--timeout", "3",
              "-X", "message.timeout.ms=60000", stdin=stdin)
    assert done.returncode == 1
    summary = _summary(done)
    assert summary == {"records": count, "bytes": 2 * count, "delivered": 0, "failed": count,
                       "first_error": f"{count} records not delivered within 3s"}, summary
    assert time.monotonic() - started < 30  # not the 60 s of message.timeout.ms


def test_summary_counts_one_failing_record_among_delivered_ones(kafka):
    topic = unique_topic("cli-count-mixed")
    create_topic(kafka, topic, 1)
    stdin = b"first\n" + b"x" * 1500 + b"\nlast\n"
    done = kf("produce", *base(kafka), "-t", topic, "-X", "message.max.bytes=1000", "--json",
              stdin=stdin)
    assert done.returncode == 1
    summary = _summary(done)
    assert {k: summary[k] for k in ("records", "delivered", "failed")} == {
        "records": 3, "delivered": 2, "failed": 1}, summary
    assert "record of 1500 bytes exceeds message.max.bytes=1000" in summary["first_error"]
    assert [g.value for g in read_confluent(kafka, topic, 1, 2)] == [b"first", b"last"]


# -- 4. bounded memory for stdin -------------------------------------------------------------

BIG = 300_000_000
GENERATOR = (f"import sys\nw = sys.stdout.buffer\nw.write(b'before\\n')\n"
             f"for _ in range({BIG // 1_000_000}):\n    w.write(b'x' * 1_000_000)\n"
             f"w.write(b'\\nafter-1\\nafter-2\\n')\n")


def test_a_huge_stdin_line_is_skipped_in_bounded_memory(kafka, tmp_path):
    topic = unique_topic("cli-huge-line")
    create_topic(kafka, topic, 1)
    gen = subprocess.Popen([sys.executable, "-c", GENERATOR], stdout=subprocess.PIPE)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    err, outfile = tmp_path / "stderr", tmp_path / "stdout"
    with open(err, "wb") as errfile, open(outfile, "wb") as outf:
        cli = subprocess.Popen([sys.executable, "-m", "kafka_fast", "produce", *base(kafka),
                                "-t", topic, "--json"], stdin=gen.stdout,
                               stdout=outf, stderr=errfile, env=env)
        assert gen.stdout is not None
        gen.stdout.close()
        code, peak_kib = wait_with_peak_rss(cli, 300)
    out = outfile.read_bytes()  # the summary only: a few hundred bytes
    assert gen.wait(60) == 0
    said = err.read_bytes().decode()
    assert code == 1, said
    assert ("kafka-fast produce: MSG_SIZE_TOO_LARGE: Broker: Message size too large: record "
            f"of {BIG} bytes exceeds message.max.bytes=1000000 (input record 2, skipped)"
            ) in said.splitlines()
    summary = json.loads(out)["produced"]
    assert {k: summary[k] for k in ("records", "delivered", "failed")} == {
        "records": 4, "delivered": 3, "failed": 1}, summary
    assert peak_kib < 150 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    assert [g.value for g in read_confluent(kafka, topic, 1, 3)] == [
        b"before", b"after-1", b"after-2"]


def test_oversized_records_are_sized_as_produce_sizes_them(kafka):
    """Over message.max.bytes + the key delimiter a record is skipped unread (sized with its
    key split off); under it, produce() itself checks the record (fixed key included)."""
    topic = unique_topic("cli-sizes")
    create_topic(kafka, topic, 1)
    fits = b"k:" + b"v" * 998                  # key 1 + value 998 <= 1000
    split_too_big = b"k:" + b"v" * 1000        # skipped: 1 + 1000 bytes
    keyed_too_big = b"w" * 999                 # to produce(): fixed key 2 + 999 bytes
    stdin = b"\n".join([fits, split_too_big, keyed_too_big, b"k:end"]) + b"\n"
    done = kf("produce", *base(kafka), "-t", topic, "-K:", "-k", "kk", "-p", "0",
              "-X", "message.max.bytes=1000", "--json", stdin=stdin)
    lines = _lines(done.stderr)
    assert lines == [
        "kafka-fast produce: MSG_SIZE_TOO_LARGE: Broker: Message size too large: record of "
        "1001 bytes exceeds message.max.bytes=1000 (input record 2, skipped)",
        "kafka-fast produce: MSG_SIZE_TOO_LARGE: Broker: Message size too large: record of "
        "1001 bytes exceeds message.max.bytes=1000 (input record 3, skipped)"], lines
    summary = _summary(done)
    assert {k: summary[k] for k in ("records", "delivered", "failed")} == {
        "records": 4, "delivered": 2, "failed": 2}, summary
    got = read_confluent(kafka, topic, 1, 2)
    assert [(g.key, g.value) for g in got] == [(b"k", b"v" * 998), (b"k", b"end")]


def test_splitting_in_chunks_gives_the_records_of_a_whole_split():
    """The splitter against bytes.split: every delimiter and key delimiter straddling chunk
    boundaries, records over the limit reported with their length."""
    import io
    import random

    class Trickle(io.RawIOBase):
        def __init__(self, data: bytes, rng: random.Random) -> None:
            self.data, self.pos, self.rng = data, 0, rng

        def readable(self) -> bool:
            return True

        def read1(self, n: int = -1) -> bytes:
            size = min(n, self.rng.randrange(1, 7))
            self.pos += size
            return self.data[self.pos - size:self.pos]

    rng = random.Random(25)
    for _ in range(5000):
        data = bytes(rng.choice(b"ab\n:") for _ in range(rng.randrange(60)))
        delim = rng.choice([b"\n", b"ab", b"\n\n", b"aba", None])
        key_delim = rng.choice([None, b":", b"b:", b"ba"])
        limit = rng.randrange(12)
        expected = [(len(p), bool(key_delim) and key_delim in p) if len(p) > limit else p
                    for p in (data.split(delim) if delim else [data]) if p]
        got = [(r.length, r.key_split) if isinstance(r, Oversize) else r
               for r in split_records(Trickle(data, rng), delim, limit, key_delim)]
        assert got == expected, (data, delim, key_delim, limit)


# -- 5. notes instead of warnings ------------------------------------------------------------

def test_a_property_without_effect_is_a_one_line_note(kafka):
    topic = unique_topic("cli-debug")
    create_topic(kafka, topic, 1)
    done = kf("produce", *base(kafka), "-t", topic, "-q", "-X", "debug=all", stdin=b"a\n")
    assert done.returncode == 0, done.stderr.decode()
    assert _lines(done.stderr) == [
        'kafka-fast produce: note: Configuration property "debug" is accepted for '
        "compatibility and has no effect"]
    assert [g.value for g in read_confluent(kafka, topic, 1, 1)] == [b"a"]


# -- 6. produce()'s checks -------------------------------------------------------------------

@pytest.mark.parametrize("partition, said", [
    ("-5", "kafka-fast produce: _UNKNOWN_PARTITION: Local: Unknown partition: {topic} has "
           "no partition -5"),
    ("1", "kafka-fast produce: _UNKNOWN_PARTITION: Local: Unknown partition: {topic} has "
          "no partition 1"),
    ("99999999999", "kafka-fast produce: partition 99999999999 is out of range (a 32-bit int)"),
])
def test_a_bad_partition_gets_produces_error_in_one_line(kafka, partition, said):
    topic = unique_topic("cli-bad-partition")
    create_topic(kafka, topic, 1)
    done = kf("produce", *base(kafka), "-t", topic, "-p", partition, "-q", stdin=b"a\n")
    assert done.returncode == 1
    assert _lines(done.stderr) == [said.format(topic=topic)]
