"""The CLI does not change data: binary keys, values and headers (null and empty kept apart)
through every output and input form, read back exactly with confluent-kafka and compared
with kcat where kcat can reach the broker (the mock cluster)."""

from __future__ import annotations

import base64
import json
import struct
import subprocess

import pytest
from clirun import base, kf, need_kcat, produce_confluent, random_records
from harness import create_topic, unique_topic
from readback import read_confluent


def _decode(field):
    if field is None or isinstance(field, str):
        return None if field is None else field.encode()
    return base64.b64decode(field["base64"])


def _triples(got) -> list:
    return [(g.key, g.value, list(g.headers)) for g in got]


def test_json_output_and_json_input_are_byte_exact(broker):
    records = random_records(60, seed=1)
    src, dst = unique_topic("cli-bin"), unique_topic("cli-bin-copy")
    create_topic(broker, src, 1)
    create_topic(broker, dst, 1)
    produce_confluent(broker, src, records)

    out = kf("consume", *base(broker), "-t", src, "-e", "--format", "json", "-q")
    assert out.returncode == 0, out.stderr.decode()
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(_decode(r["key"]), _decode(r["value"]),
             [(n, _decode(v)) for n, v in r["headers"]]) for r in rows] == records
    assert [r["offset"] for r in rows] == list(range(len(records)))

    back = kf("produce", *base(broker), "-t", dst, "--format", "json", "-q", stdin=out.stdout)
    assert back.returncode == 0, back.stderr.decode()
    assert _triples(read_confluent(broker, dst, 1, len(records))) == records


def test_format_strings_write_raw_bytes(broker):
    records = random_records(40, seed=2)
    topic = unique_topic("cli-raw")
    create_topic(broker, topic, 1)
    produce_confluent(broker, topic, records)
    out = kf("consume", *base(broker), "-t", topic, "-e", "-q", "-f", "%K:%S:%R%k%s")
    assert out.returncode == 0, out.stderr.decode()
    data, pos, got = out.stdout, 0, []
    for _ in records:
        klen, vlen, _ = data[pos:pos + 40].split(b":", 2)
        pos += len(klen) + len(vlen) + 2
        (prefix,) = struct.unpack_from(">i", data, pos)
        assert prefix == int(vlen)
        pos += 4
        klen, vlen = int(klen), int(vlen)
        key = None if klen < 0 else data[pos:pos + klen]
        pos += max(klen, 0)
        value = None if vlen < 0 else data[pos:pos + vlen]
        pos += max(vlen, 0)
        got.append((key, value))
    assert pos == len(data)
    assert got == [(k, v) for k, v, _ in records]
    # 200 zero bytes: the length prefix is 00 00 00 c8, then the bytes themselves.
    one = kf("consume", *base(broker), "-t", topic, "-o", "6", "-c", "1",
             "-q", "-f", "%R%s")
    assert one.stdout == b"\x00\x00\x00\xc8" + bytes(200)
    # Headers: name=value, NULL for a null value, comma-separated, bytes unchanged.
    hdr = kf("consume", *base(broker), "-t", topic, "-o", "4", "-c", "2", "-q", "-f", "%h\\n")
    assert hdr.stdout == (b"all=" + bytes(range(256)) + b"\n"
                          + b"text=plain,dup=1,dup=\x00\n")


def test_each_file_is_one_record_with_its_exact_bytes(broker, tmp_path):
    records = random_records(5, seed=3)
    topic = unique_topic("cli-files")
    create_topic(broker, topic, 1)
    paths = []
    for i, (_, value, _) in enumerate(records[4:]):
        path = tmp_path / f"v{i}.bin"
        path.write_bytes(value)
        paths.append(str(path))
    done = kf("produce", *base(broker), "-t", topic, "-k", "fixed", "-q", *paths)
    assert done.returncode == 0, done.stderr.decode()
    got = read_confluent(broker, topic, 1, len(paths))
    assert [(g.key, g.value) for g in got] == [(b"fixed", v) for _, v, _ in records[4:]]


INPUT = b"k1:v1\n\n:v2;;k3:\r\nnokey\x00\x00\n:\r\n\n\nlast:x\x00y;"


@pytest.mark.parametrize("flags", [[], ["-K:"], ["-K:", "-Z"], ["-D", ";"], ["-D", "\\x3b"], ["-D", "\\n\\n"],
                                   ["-K", ":", "-D", ";;"]])
def test_input_is_split_as_kcat_splits_it(mock_cluster, kcat, flags):
    kcat = need_kcat(kcat)
    by_kcat, by_us = unique_topic("cli-in-kcat"), unique_topic("cli-in-kf")
    create_topic(mock_cluster, by_kcat, 1)
    create_topic(mock_cluster, by_us, 1)
    subprocess.run([kcat, "-P", "-b", mock_cluster.bootstrap, "-t", by_kcat, "-p", "0", *flags],
                   input=INPUT, check=True, timeout=60)
    done = kf("produce", *base(mock_cluster), "-t", by_us, "-p", "0", "-q", *flags, stdin=INPUT)
    assert done.returncode == 0, done.stderr.decode()
    expected = [(g.key, g.value) for g in read_confluent(mock_cluster, by_kcat, 1, 1)]
    got = [(g.key, g.value) for g in read_confluent(mock_cluster, by_us, 1, len(expected))]
    assert got == expected and len(got) >= 2


@pytest.mark.parametrize("flags", [
    ["-f", "%t|%p|%o|%k|%s|%S|%K|%h|%T|%R|%%\\n"],
    ["-f", "%k\\t%s\\x01\\n", "-Z"],
    ["-K", "\\t", "-D", "#"],
    ["-K", ":", "-Z"],
    [],
    ["-J"],
    ["-s", "key=>i", "-s", "value=>hQs", "-f", "[%k][%s]\\n", "-o", "2", "-c", "1"],
    # (kcat 1.7.1 reads "<H" big-endian too; kafka-fast reads "<" as little-endian, as
    # kcat's help says, so only the default byte order is compared.)
    ["-s", "value=H", "-f", "%s\\n", "-o", "3", "-c", "1"],
])
def test_output_is_the_same_as_kcats(mock_cluster, kcat, flags):
    kcat = need_kcat(kcat)
    topic = unique_topic("cli-vs-kcat")
    create_topic(mock_cluster, topic, 1)
    records = [
        (b"k\xff", b"value \x00\x01\x1f\"\\/\n\t\xc3\xa9\xff", [("h1", b"v\xff1"), ("h2", None)]),
        (None, None, []), (struct.pack(">i", -5), struct.pack(">hQ", 7, 2**63 + 1) + b"tail", []),
        (b"", b"\x01\x02", [("e", b"")]), (b"x" * 300, b"y" * 1000, []),
    ]
    produce_confluent(mock_cluster, topic, records)
    common = ["-b", mock_cluster.bootstrap, "-t", topic, "-e"]
    theirs = subprocess.run([kcat, "-C", *common, *flags], capture_output=True, timeout=60)
    assert theirs.returncode == 0, theirs.stderr
    ours = kf("consume", *common, "-q", *flags)
    assert ours.returncode == 0, ours.stderr.decode()
    assert ours.stdout == theirs.stdout and ours.stdout


def test_pack_str_that_does_not_match_names_the_record(mock_cluster):
    topic = unique_topic("cli-serde")
    create_topic(mock_cluster, topic, 1)
    produce_confluent(mock_cluster, topic, [(None, b"\x00\x07", []), (None, b"\x00\x07AB", [])])
    done = kf("consume", *base(mock_cluster), "-t", topic, "-e", "-q", "-s", "value=>h$")
    assert done.returncode == 1 and done.stdout == b"7\n"
    assert b"offset 1: expected end-of-input, but 2 bytes remaining" in done.stderr
