"""kcat's command line read as kcat reads it (getopt with GNU permutation), turned into
kafka-fast's options, and every kcat flag kafka-fast cannot honour refused, naming it."""

from __future__ import annotations

import pytest
from clirun import kf

from kafka_fast.cli import build_parser
from kafka_fast.cli.kcatargs import getopt, is_kcat_command, parse
from kafka_fast.cli.kcatfmt import parse_delim, parse_format, unescape
from kafka_fast.cli.options import UsageError


def test_getopt_clusters_attaches_and_permutes_as_getopt():
    opts, rest = getopt(["-Ceq", "-tTOPIC", "file1", "-o", "-5", "-K:", "--", "-x"])
    assert opts == [("C", ""), ("e", ""), ("q", ""), ("t", "TOPIC"), ("o", "-5"), ("K", ":")]
    assert rest == ["file1", "-x"]


@pytest.mark.parametrize("argv, said", [
    (["-Y"], "unknown option -Y"),
    (["-C", "-t"], "option -t requires a value"),
    (["--json"], "unknown option --json"),
])
def test_getopt_errors_name_the_option(argv, said):
    with pytest.raises(UsageError, match=said):
        getopt(argv)


def test_only_a_command_line_starting_with_an_option_is_kcats():
    assert is_kcat_command(["-C", "-b", "x"]) and is_kcat_command(["-b", "x", "-L"])
    assert not is_kcat_command(["consume", "-b", "x"])
    assert not is_kcat_command(["--version"]) and not is_kcat_command(["-h"])


def _parse(*argv: str, monkeypatch=None):
    return parse(list(argv), build_parser())


def test_consume_options_become_the_consume_subcommand(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KCAT_CONFIG", raising=False)
    args = _parse("-C", "-b", "h:1", "-t", "t", "-o", "-5", "-c", "0", "-p", "-1", "-K", "=",
                  "-D", "-", "-X", "topic.auto.offset.reset=earliest", "-d", "all", "-m", "7")
    assert (args.command, args.topic, args.offset, args.count, args.partition) == (
        "consume", "t", ["-5"], None, None)   # kcat: -c 0 and -p -1 are "no limit", "all"
    assert (args.key_delimiter, args.delimiter, args.timeout) == ("=", "-", 7.0)
    assert args.props == ["auto.offset.reset=earliest", "debug=all"] and args.kcat
    listing = _parse("-L", "-v", "-X", "metadata.broker.list=h:2")
    assert listing.props == ["bootstrap.servers=h:2"] and listing.command == "metadata"


def test_debug_is_a_note_that_it_has_no_effect(tmp_path):
    done = kf("-L", "-d", "all", "-b", "127.0.0.1:1", "-m", "2",
              env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1 and not done.stdout
    assert ('kafka-fast metadata: note: Configuration property "debug" is accepted for '
            "compatibility and has no effect") in done.stderr.decode()


def test_start_time_wins_over_an_offset_and_the_last_of_each_counts(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    args = _parse("-C", "-b", "h:1", "-t", "t", "-o", "s@5", "-o", "7", "-o", "e@9",
                  "-o", "e@10")
    assert args.offset == ["s@5", "e@10"]


def test_group_mode_takes_its_topic_after_the_options_and_starts_at_the_end(monkeypatch,
                                                                             tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    args = _parse("-b", "h:1", "-G", "g1", "topic1", "-e")
    assert (args.group, args.topic, args.exit_at_end) == ("g1", "topic1", True)
    assert args.props == ["auto.offset.reset=latest"]   # librdkafka's default, as kcat -G


def test_produce_uses_librdkafkas_partitioner_and_takes_files(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    args = _parse("-P", "-b", "h:1", "-t", "t", "a.txt", "-H", "n", "-k", "-key", "b.txt",
                  "-p", "-1")
    assert (args.command, args.file, args.headers, args.fixed_key, args.partition) == (
        "produce", ["a.txt", "b.txt"], ["n"], "-key", -1)
    assert args.defaults == {"partitioner": "consistent_random"}


def test_configuration_file_as_kcat_finds_it(monkeypatch, tmp_path):
    conf = tmp_path / ".config" / "kcat.conf"
    conf.parent.mkdir()
    conf.write_text("bootstrap.servers=h:1\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KCAT_CONFIG", raising=False)
    assert _parse("-L").prop_file == str(conf)
    assert _parse("-L", "-F", "-", "-b", "h:1").prop_file is None
    other = tmp_path / "other.conf"
    other.write_text("bootstrap.servers=h:2\n")
    monkeypatch.setenv("KCAT_CONFIG", str(other))
    assert _parse("-L").prop_file == str(other)
    assert _parse("-L", "-F", str(conf)).prop_file == str(conf)


@pytest.mark.parametrize("argv, said", [
    (["-M", "1"], "-M starts librdkafka's mock cluster"),
    (["-C", "-t", "t", "-r", "http://sr"], "-r names a schema registry"),
    (["-P", "-t", "t", "-T"], "-T (tee produced records to stdout) is not supported"),
    (["-C", "-t", "t", "-E"], "-E (go on after errors) is not supported"),
    (["-C", "-t", "t", "-O"], "-O is not supported"),
    (["-U"], "-U runs kcat's own unit tests"),
    (["-L", "-X", "list"], "-X list is not supported"),
    (["-L", "-X", "dump"], "-X dump is not supported"),
    (["-C", "-t", "t", "-s", "value=avro"], "-s value=avro: Avro needs a schema registry"),
    (["-C", "-t", "t", "-k", "key"], "-k is not an option for consuming (-C)"),
    (["-P", "-t", "t", "-e"], "-e is not an option for producing (-P)"),
    (["-L", "-o", "5"], "-o is not an option for listing metadata (-L)"),
    (["-C", "-P", "-t", "t"], "do not mix modes: -P given after -C"),
    (["-G", "g", "a", "b"], "-G: kafka-fast consumes one topic in a group, got 2 (a b)"),
    (["-C", "-t", "t", "extra"], "file or topic arguments are only for producing"),
    (["-Q"], "-Q requires one or more -t <topic>:<partition>:<timestamp>"),
    (["-Q", "-t", "t:x:5"], '-t: expected "topic:partition:offset_or_timestamp"'),
    (["-C", "-p", "one", "-t", "t"], "-p expects a number, got 'one'"),
    (["-C", "-f", "%x", "-t", "t"], "-f: unsupported formatter %x"),
    (["-C", "-f", "abc%", "-t", "t"], "-f: empty formatter"),
    (["-C"], "-t <topic> missing"),
    (["-C", "-X", "debug", "-t", "t"], "-X expects property=value, got 'debug'"),
    (["-P", "-t", "t", "-z", "brotli"], "-z expects one of none, gzip, snappy, lz4, zstd"),
])
def test_flags_kafka_fast_cannot_honour_are_refused_naming_them(argv, said, tmp_path):
    done = kf(*argv, "-b", "127.0.0.1:1", stdin=b"", timeout=60,
              env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    err = done.stderr.decode()
    assert done.returncode == 1 and not done.stdout, err
    assert len(err.splitlines()) == 1 and said in err and "Traceback" not in err, err


def test_version_and_help():
    version = kf("-V")
    assert version.returncode == 0 and version.stdout.startswith(b"kafka-fast ")
    assert b"(kcat command line)" in version.stdout
    usage = kf("-h")
    assert usage.returncode == 0 and b"consume" in usage.stdout   # kafka-fast's own -h


def test_escapes_as_kcat_reads_them():
    # -f literal text: \n \r \t, \x + hex digits, \ + decimal (C's base 0), else the letter
    assert unescape(r"\x41\65\q\\ \012\0x42\t\r\n\xff") == b"AAq\\ \nB\t\r\n\xff"
    assert unescape(r"a\0b\x00;") == b"a\x00b\x00;"   # kcat 1.7.1 would end the text at "a"
    # -D/-K: only \n \t \xNN, and then the result is part of the output format
    assert parse_delim(r"\r\x3d\\n") == b"\\r=\\\n"
    assert parse_format("%k%%\\x3d%s") == ["k", b"%", b"=", "s"]
