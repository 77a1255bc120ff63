"""Coverage-guided fuzzing (atheris/libFuzzer) of everything that parses bytes from a peer.

Targets (``--target``):

- ``records``: ``decode_batches`` then ``records()``/``columns()`` on the compiled engine and
  its pure twin; both must reach the same outcome, and columns must agree with records.
- ``decompress``: every codec's bounded decompression (first byte picks the codec), plus a
  compress/decompress round trip of the input.
- ``protocol``: Produce, Fetch and Metadata response bodies (first bytes pick the API and
  version); the records of every decoded Fetch partition go through ``decode_partition``, and
  every Produce body through the compiled Produce response parser and its twin, which must
  agree with each other and with the generated decoder; Fetch bodies through the column reader
  (``_fetchwire``) and its twin, which must read what the codec reads and refuse what it
  refuses.
- ``buffers``: the compiled entry points that take buffers (``patch_producer_fields``,
  ``crc32c``, hashes, varints, packed ``encode_batch``/``partition_column``) against the
  pure twins.

Only the documented errors may escape the code under test: ``CorruptRecordError``,
``ValueError`` (the protocol's ``WireError`` is one) and ``ProtocolError``. Anything else, a
mismatch between the implementations, or a crash is a finding: libFuzzer stops, writes the
input to ``--artifacts`` and exits non-zero.

Coverage comes from the instrumented Python code (the pure twin, codecs, protocol decoder);
the compiled code runs on the same inputs (gcc cannot build libFuzzer instrumentation, and
atheris' coverage breaks under gcc's ASan runtime), so ``make sanitize`` fuzzes briefly with the
normal build and replays every input found against the ASan/UBSan build.

    python tools/fuzz.py run --target records --seconds 10 [--corpus DIR] [--artifacts DIR]
    python tools/fuzz.py replay [--target T] [--corpus DIR]  # no fuzzing, no atheris
    python tools/fuzz.py seeds                 # (re)write the committed seed corpus
    python tools/fuzz.py merge --target T DIR  # add what DIR covers beyond the corpus
"""

from __future__ import annotations

import argparse
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"
TARGETS = ("records", "decompress", "protocol", "buffers")

# filled by _load() (inside atheris' import instrumentation when fuzzing)
K: dict = {}


def _load() -> None:
    import numpy as np

    from kafka_fast._native import _crc32c, _fetchwire, _partition, _producewire, _records
    from kafka_fast._pure import crc32c as pure_crc32c
    from kafka_fast._pure import fetchwire as pure_fetchwire
    from kafka_fast._pure import partition as pure_partition
    from kafka_fast._pure import producewire as pure_producewire
    from kafka_fast._pure import records as pure_records
    from kafka_fast.codecs import compression
    from kafka_fast.consumer.fetch_decode import decode_partition
    from kafka_fast.consumer.fetch_wire import MessageWire, plain
    from kafka_fast.errors import CorruptRecordError, ProtocolError
    from kafka_fast.producer import wire
    from kafka_fast.protocol import messages

    K.update(
        np=np, C=compression, native=_records, pure=pure_records, ncrc=_crc32c.crc32c,
        pcrc=pure_crc32c.crc32c, npart=_partition, ppart=pure_partition,
        decode_partition=decode_partition, Corrupt=CorruptRecordError,
        wire=wire, nwire=_producewire, pwire=pure_producewire,
        fetch_wires=(_fetchwire.parse_fetch, pure_fetchwire.parse_fetch),
        MessageWire=MessageWire,
        plain=plain,
        DOCUMENTED=(CorruptRecordError, ValueError, ProtocolError),
        RESPONSES=[messages.ProduceResponse, messages.FetchResponse, messages.MetadataResponse],
    )


# ---------------------------------------------------------------------------------------------
# targets


def _record_outcome(rec, data: bytes, verify_crc: bool):
    """Everything decodable from ``data`` (per batch: header fields and records), or
    'corrupt'; checks that columns() agrees with records()."""
    corrupt = K["Corrupt"]
    try:
        batches = rec.decode_batches(data, verify_crc=verify_crc,
                                     budget=K["C"].DecompressionBudget(1 << 22))
    except corrupt:
        return "corrupt"
    out = []
    for b in batches:
        head = (b.base_offset, b.last_offset_delta, b.magic, b.compression, b.timestamp_type,
                b.is_transactional, b.is_control, b.producer_id, b.producer_epoch,
                b.base_sequence, b.first_timestamp, b.max_timestamp, b.byte_size, b.next_offset)
        try:
            recs = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()]
        except corrupt:
            recs = "corrupt"
        try:
            c = b.columns()
            cols = [(int(o), int(t), k, v) for o, t, k, v in
                    zip(c.offsets, c.timestamps, c.key_list(), c.value_list(), strict=True)]
            if c.headers is not None and recs != "corrupt":
                assert c.headers == [r[4] for r in recs], "columns() headers differ"
        except corrupt:
            cols = "corrupt"
        if recs == "corrupt" or cols == "corrupt":
            assert recs == cols, f"records() {recs!r:.200} but columns() {cols!r:.200}"
        else:
            assert cols == [r[:4] for r in recs], "columns() differ from records()"
        out.append((head, recs))
    return out


def fuzz_records(data: bytes) -> None:
    verify = bool(data[:1]) and bool(data[0] & 1)
    body = data[1:]
    native = _record_outcome(K["native"], body, verify)
    pure = _record_outcome(K["pure"], body, verify)
    assert native == pure, f"compiled {native!r:.300} != pure {pure!r:.300}"


def fuzz_decompress(data: bytes) -> None:
    C = K["C"]
    if not data:
        return
    codec = 1 + data[0] % 4
    legacy = bool(data[0] & 0x80)
    body = data[1:]
    try:
        out = C.decompress(codec, body, max_size=1 << 20, legacy_lz4=legacy)
    except K["Corrupt"]:
        pass
    else:
        assert len(out) <= 1 << 20
    packed = C.compress(codec, body)
    assert C.decompress(codec, packed) == body, "round trip differs"


def _fetch_outcome(parse: Callable, body: bytes, version: int):
    """What the consumer reads from a Fetch response ``body``: the columns of the compiled
    or pure reader (the generated codec's when the reader hands the response back), or the
    name of the documented error raised."""
    try:
        w = parse(body, version)
        if w is None:
            w = K["MessageWire"](K["RESPONSES"][1].decode(body, version), version)
    except K["DOCUMENTED"] as exc:
        return type(exc).__name__
    return K["plain"](w)


def fuzz_protocol(data: bytes) -> None:
    if len(data) < 2:
        return
    cls = K["RESPONSES"][data[0] % 3]
    span = cls.MAX_VERSION - cls.MIN_VERSION + 1
    version = cls.MIN_VERSION + data[1] % span
    wires = None
    if cls.__name__ == "FetchResponse":
        wires = [_fetch_outcome(parse, data[2:], version) for parse in K["fetch_wires"]]
        assert wires[0] == wires[1], "the Fetch response reader and its twin differ"
    try:
        resp = cls.decode(data[2:], version)
    except K["DOCUMENTED"]:
        resp = None
        assert wires is None or wires[0] == "ProtocolError", "the codec refused, the reader not"
    if cls.__name__ == "ProduceResponse":
        _produce_columns(data[2:], version, resp)
    if resp is None:
        return
    if wires is not None:
        assert wires[0] == K["plain"](K["MessageWire"](resp, version)), \
            "the Fetch response reader and the codec differ"
    if cls.__name__ == "FetchResponse":
        for topic in resp.responses:
            for p in topic.partitions:
                aborted = [(a.producer_id, a.first_offset)
                           for a in (p.aborted_transactions or ())]
                d = K["decode_partition"](p.records, 0, aborted_transactions=aborted,
                                          verify_crc=bool(data[1] & 1),
                                          budget=K["C"].DecompressionBudget(1 << 22))
                assert d.count == sum(len(s) for s in d.segments)


def _produce_columns(body: bytes, version: int, resp) -> None:
    """The compiled Produce response parser and its twin agree; their columns are the
    generated decoder's fields, and what they refuse as malformed it refuses too."""
    layout = K["wire"].response_layout(version)
    outs = [_documented(m.parse_produce_response, body, **layout)
            for m in (K["nwire"], K["pwire"])]
    assert outs[0] == outs[1], f"parse_produce_response: {outs!r:.300}"
    out = outs[0]
    if out == "ValueError":
        assert resp is None, "the generated decoder read what the parser refused"
    elif out is not None:
        assert resp is not None, "the parser read what the generated decoder refused"
        topics, topic_index, partition, code, base, lat, lso, throttle = out
        rows = []
        for t in resp.responses:
            for p in t.partition_responses:
                rows.append((t.topic_id.bytes if layout["topic_ids"] else t.name, p.index,
                             p.error_code, p.base_offset,
                             p.log_append_time_ms if layout["append_time"] else -1,
                             p.log_start_offset if layout["start_offset"] else -1))
        got = [(topics[t], *row) for t, *row in zip(topic_index, partition, code, base, lat,
                                                     lso, strict=True)]
        assert (got, throttle) == (rows, resp.throttle_time_ms), "columns differ"


def _documented(f: Callable, *args, **kw):
    """f's result, or the name of a documented exception it raised."""
    try:
        return f(*args, **kw)
    except K["DOCUMENTED"] as exc:
        return type(exc).__name__


def fuzz_buffers(data: bytes) -> None:
    np, native, pure = K["np"], K["native"], K["pure"]
    sel = data[0] if data else 0
    body = data[1:]
    # sized by the buffer, whatever the object's shape or len()
    arr = np.frombuffer(body, np.uint8)
    shapes = [arr, arr.reshape(1, -1), np.zeros((len(body) * 1000 + 1, 0), np.uint8)]
    view = shapes[sel % 3]
    assert K["ncrc"](view) == K["pcrc"](view)
    assert K["npart"].murmur2(view) == K["ppart"].murmur2(view)
    assert K["npart"].fnv1a(view) == K["ppart"].fnv1a(view)
    args = (int.from_bytes(body[:8].ljust(8, b"\0"), "big", signed=True), sel - 128, sel)
    assert _documented(native.patch_producer_fields, view, *args) == \
        _documented(pure.patch_producer_fields, view, *args)
    for pos in (0, sel % (len(body) + 1)):
        for fn in ("decode_varint", "decode_varlong"):
            assert _documented(getattr(native, fn), body, pos) == \
                _documented(getattr(pure, fn), body, pos)
    # packed columns: offsets from the input, data the input itself
    n = sel % 8
    offs = np.array(sorted(b % (len(body) + 2) for b in body[:n + 1]) or [0], np.int64)
    nulls = np.array([b & 1 for b in body[:len(offs) - 1]], np.bool_)
    packed = (view, offs, nulls) if sel & 0x40 else (view, offs)
    outcomes = [_documented(m.encode_batch, packed, timestamps=sel, base_offset=n)
                for m in (native, pure)]
    assert outcomes[0] == outcomes[1], f"encode_batch: {outcomes!r:.300}"
    parts = [_documented(m.partition_column, packed, 1 + sel % 5, 3)
             for m in (K["npart"], K["ppart"])]
    parts = [p.tolist() if hasattr(p, "tolist") else p for p in parts]
    assert parts[0] == parts[1], f"partition_column: {parts!r:.300}"


FUZZERS: dict[str, Callable[[bytes], None]] = {
    "records": fuzz_records, "decompress": fuzz_decompress, "protocol": fuzz_protocol,
    "buffers": fuzz_buffers,
}


# ---------------------------------------------------------------------------------------------
# seeds


def _legacy_message(offset: int, magic: int, attrs: int, key, value, ts: int = 5) -> bytes:
    body = struct.pack(">bb", magic, attrs) + (struct.pack(">q", ts) if magic else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def seeds() -> dict[str, dict[str, bytes]]:
    """A small seed corpus per target: valid inputs of every shape the parsers accept."""
    _load()
    native, C, m = K["native"], K["C"], K["RESPONSES"]
    out: dict[str, dict[str, bytes]] = {t: {} for t in TARGETS}
    recs = dict(values=[b"v1", None, b"value-3"], keys=[b"k", b"key", None], timestamps=[5, 6, 9],
                headers=[[("h", b"x")], [], [("n", None)]])
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        batch = native.encode_batch(recs["values"], recs["keys"], timestamps=recs["timestamps"],
                                    headers=recs["headers"], compression=codec,
                                    base_offset=40, producer_id=1, producer_epoch=0,
                                    base_sequence=0)
        out["records"][f"v2-{codec}"] = b"\x01" + batch
        out["decompress"][f"{codec}"] = bytes([C.codec_id(codec) or 1]) + (
            C.compress(codec, b"abcabcabc" * 20) if codec != "none" else b"")
    out["records"]["two-batches-partial"] = b"\x00" + out["records"]["v2-none"][1:] * 2 + b"\0" * 9
    inner = b"".join(_legacy_message(i, 1, 0, None, b"m%d" % i) for i in range(3))
    out["records"]["legacy-v1-gzip"] = b"\x01" + _legacy_message(
        12, 1, 1, None, C.compress("gzip", inner))
    out["records"]["legacy-v0"] = b"\x01" + _legacy_message(3, 0, 0, b"k", b"v") + \
        _legacy_message(4, 0, 0, None, b"w")
    out["decompress"]["gzip-members"] = b"\x01" + C.compress("gzip", b"a") * 3 + \
        C.compress("gzip", b"")
    # responses: one of each API at a flexible and an old version
    produce, fetch, metadata = m
    for cls, version, obj in (
        (produce, 9, produce(responses=[produce.TopicProduceResponse(
            name="t", partition_responses=[produce.PartitionProduceResponse(
                index=0, error_code=0, base_offset=7, log_append_time_ms=-1,
                log_start_offset=0)])], throttle_time_ms=0)),
        (fetch, 12, fetch(throttle_time_ms=0, error_code=0, session_id=0, responses=[
            fetch.FetchableTopicResponse(topic="t", partitions=[fetch.PartitionData(
                partition_index=0, error_code=0, high_watermark=43, last_stable_offset=43,
                log_start_offset=0, aborted_transactions=[
                    fetch.AbortedTransaction(producer_id=1, first_offset=40)],
                records=out["records"]["v2-lz4"][1:])])])),
        (metadata, 12, metadata(throttle_time_ms=0, brokers=[metadata.MetadataResponseBroker(
            node_id=1, host="localhost", port=9092)], cluster_id="c", controller_id=1,
            topics=[metadata.MetadataResponseTopic(error_code=0, name="t", partitions=[
                metadata.MetadataResponsePartition(error_code=0, partition_index=0,
                                                   leader_id=1, replica_nodes=[1],
                                                   isr_nodes=[1])])])),
    ):
        for v in (version, cls.MIN_VERSION + 1):
            idx = [produce, fetch, metadata].index(cls)
            out["protocol"][f"{cls.NAME}-v{v}"] = bytes(
                [idx, v - cls.MIN_VERSION]) + bytes(obj.encode(v))
    out["buffers"]["batch"] = b"\x00" + out["records"]["v2-none"][1:]
    out["buffers"]["varints"] = b"\x45" + bytes([0x80, 0x80, 0x01, 0x7F, 0xFF, 0xFF, 0xFF, 0x0F])
    out["buffers"]["packed"] = b"\x47" + bytes(range(40))
    return out


def write_seeds() -> None:
    for target, files in seeds().items():
        d = CORPUS / target
        d.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (d / f"seed-{name}").write_bytes(data)
        print(f"{target}: {len(files)} seeds in {d.relative_to(ROOT)}")


# ---------------------------------------------------------------------------------------------
# running


def replay(targets: list[str], extra: Path | None = None) -> dict[str, int]:
    """Run every committed corpus file (and those in ``extra/<target>``) through its target,
    without fuzzing, e.g. under the sanitizers; returns the number of inputs per target."""
    _load()
    counts = {}
    for target in targets:
        dirs = [CORPUS / target] + ([extra / target] if extra and (extra / target).is_dir()
                                    else [])
        files = sorted(f for d in dirs for f in d.iterdir())
        for f in files:
            try:
                FUZZERS[target](f.read_bytes())
            except Exception as exc:
                raise AssertionError(f"{target}: {f.name}: {exc!r}") from exc
        counts[target] = len(files)
    return counts


_CHILD_ENV = "FUZZ_CHILD_TARGET"  # libFuzzer's -merge re-runs argv[0] with its flags only


def _fuzz_child(target: str, argv: list[str]) -> None:
    import atheris

    os.environ[_CHILD_ENV] = target
    with atheris.instrument_imports(include=["kafka_fast"]):
        _load()
    # argv[0] is what -merge runs again through the shell: this interpreter and script
    atheris.Setup([f"{sys.executable} {Path(__file__).resolve()}", *argv], FUZZERS[target])
    atheris.Fuzz()


class FuzzStats(NamedTuple):
    """What one bounded run did: executions, covered edges/features, corpus inputs at the
    end (committed seeds included) and new inputs found."""

    runs: int
    coverage: int
    features: int
    corpus: int
    new: int


def run(target: str, seconds: float, corpus: Path | None, artifacts: Path,
        max_len: int = 4096) -> FuzzStats:
    """Fuzz ``target`` for ``seconds`` in a child process, starting from the committed corpus
    (new inputs go to ``corpus``, a temporary directory if None). Raises RuntimeError with
    libFuzzer's report on a finding."""
    artifacts.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{target}-") as tmp:
        work = corpus or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        argv = [str(work), str(CORPUS / target), f"-max_total_time={max(int(seconds), 1)}",
                f"-max_len={max_len}", "-rss_limit_mb=2048", "-timeout=20",
                f"-artifact_prefix={artifacts}/{target}-", "-print_final_stats=1"]
        proc = subprocess.run([sys.executable, __file__, "child", target, *argv],
                              capture_output=True, text=True, timeout=seconds + 300)
    report = proc.stderr
    if proc.returncode != 0:
        raise RuntimeError(f"fuzz target {target}: libFuzzer exited with {proc.returncode}\n"
                           f"{report[-6000:]}")
    found = re.search(r"stat::number_of_executed_units:\s*(\d+)", report)
    progress = re.findall(r"cov: (\d+) ft: (\d+) corp: (\d+)/", report)
    new = re.search(r"stat::new_units_added:\s*(\d+)", report)
    if not found or not progress or not new:
        raise RuntimeError(f"fuzz target {target}: no statistics in libFuzzer's report\n"
                           f"{report[-3000:]}")
    cov, ft, corp = (int(x) for x in progress[-1])
    return FuzzStats(int(found.group(1)), cov, ft, corp, int(new.group(1)))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["child"]:
        _fuzz_child(argv[1], argv[2:])
        return 0
    if os.environ.get(_CHILD_ENV) and argv[:1] and argv[0] not in (
            "run", "replay", "seeds", "merge", "-h", "--help"):
        _fuzz_child(os.environ[_CHILD_ENV], argv)
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="fuzz for a bounded time")
    r.add_argument("--target", choices=(*TARGETS, "all"), default="all")
    r.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", 6)),
                   help="per target")
    r.add_argument("--corpus", type=Path, help="keep new inputs here (default: discard)")
    r.add_argument("--artifacts", type=Path, default=ROOT / "build" / "fuzz")
    rp = sub.add_parser("replay", help="run the committed corpus through the targets")
    rp.add_argument("--target", choices=(*TARGETS, "all"), default="all")
    rp.add_argument("--corpus", type=Path, help="also replay the inputs kept here by `run`")
    sub.add_parser("seeds", help="write the seed corpus")
    mg = sub.add_parser("merge", help="add the inputs of DIR that cover something new to the "
                                      "committed corpus")
    mg.add_argument("--target", choices=TARGETS, required=True)
    mg.add_argument("dir", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "seeds":
        write_seeds()
    elif a.cmd == "merge":
        before = len(list((CORPUS / a.target).iterdir()))
        subprocess.run([sys.executable, __file__, "child", a.target, "-merge=1",
                        str(CORPUS / a.target), str(a.dir)], check=True, capture_output=True)
        after = len(list((CORPUS / a.target).iterdir()))
        print(f"{a.target}: {after - before} inputs added, {after} in the corpus")
    elif a.cmd == "replay":
        for t, n in replay(list(TARGETS) if a.target == "all" else [a.target],
                           a.corpus).items():
            print(f"{t}: {n} corpus inputs replayed")
    else:
        for t in TARGETS if a.target == "all" else (a.target,):
            corpus = a.corpus / t if a.corpus else None
            st = run(t, a.seconds, corpus, a.artifacts)
            print(f"{t}: {st.runs} executions in {a.seconds:g} s, coverage {st.coverage} edges "
                  f"/ {st.features} features, corpus {st.corpus} inputs "
                  f"({len(list((CORPUS / t).iterdir()))} committed, {st.new} new)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
