"""Decoding work is bounded and linear in the input: gzip payloads of many members decode in
linear time (counted in bytes handed to zlib), and all decompressions of one record set share
one cap (``MAX_DECOMPRESSED_SIZE``), so many compressed messages cannot add up past it."""

from __future__ import annotations

import gzip
import struct
import time
import zlib

import pytest

from kafka_fast.codecs import compression as C
from kafka_fast.consumer import fetch_decode
from kafka_fast.errors import CorruptRecordError, DecompressionLimitError


class CountingZlib:
    """Stands in for the zlib module in ``kafka_fast.codecs.compression``: counts the compressed
    bytes handed to decompressors and the bytes zlib copies back as ``unused_data``."""

    error = zlib.error
    compressobj = staticmethod(zlib.compressobj)

    def __init__(self) -> None:
        self.fed = 0
        self.copied = 0
        self.members = 0

    def decompressobj(self, wbits):
        return _CountingDecompressor(self, zlib.decompressobj(wbits))


class _CountingDecompressor:
    def __init__(self, counter: CountingZlib, d) -> None:
        self._counter = counter
        self._d = d
        counter.members += 1

    def decompress(self, data, max_length=0):
        self._counter.fed += len(data)
        out = self._d.decompress(data, max_length)
        self._counter.copied += len(self._d.unused_data) + len(self._d.unconsumed_tail)
        return out

    def __getattr__(self, name):
        return getattr(self._d, name)


def _gunzip_counted(monkeypatch, payload: bytes) -> tuple[bytes, CountingZlib]:
    counter = CountingZlib()
    monkeypatch.setattr(C, "zlib", counter)
    out = C.decompress("gzip", payload)
    monkeypatch.undo()
    return out, counter


@pytest.mark.parametrize("megabytes", [0.5, 4])
def test_many_empty_gzip_members_take_linear_work(monkeypatch, megabytes):
    empty = gzip.compress(b"", mtime=0)
    members = int(megabytes * 1e6) // len(empty)
    payload = empty * members
    started = time.monotonic()
    out, counter = _gunzip_counted(monkeypatch, payload + gzip.compress(b"end", mtime=0))
    assert out == b"end"
    assert counter.members == members + 1
    # zlib sees each input byte a bounded number of times (was: the whole rest per member)
    assert counter.fed <= 16 * len(payload)
    assert counter.copied <= 16 * len(payload)
    assert time.monotonic() - started < 60  # guard only: was 9.8 s at 4 MB, quadratic


def test_mixed_gzip_members_decode_exactly_with_linear_work(monkeypatch):
    parts = [bytes([i % 251]) * (i * 997 % 300_000) + b"|%d|" % i for i in range(60)]
    payload = b"".join(gzip.compress(p, mtime=0) for p in parts)
    out, counter = _gunzip_counted(monkeypatch, payload)
    assert out == b"".join(parts)
    assert counter.members == 60
    assert counter.fed <= 3 * len(payload) + 60 * 256
    assert counter.copied <= 3 * len(payload) + 60 * 256


@pytest.mark.parametrize("cut", [1, 10, 25])
def test_truncated_last_gzip_member(cut):
    payload = gzip.compress(b"a" * 1000, mtime=0) * 3
    with pytest.raises(CorruptRecordError, match="gzip data is (truncated|invalid)"):
        C.decompress("gzip", payload[:-cut])


def test_budget_caps_several_decompressions():
    budget = C.DecompressionBudget(100_000)
    chunk = C.compress("zstd", b"x" * 40_000)
    for _ in range(2):
        with C.decompress_pooled("zstd", chunk, budget=budget) as lease:
            assert bytes(lease.view) == b"x" * 40_000
    assert budget.used == 80_000 and budget.remaining() == 20_000
    with pytest.raises(DecompressionLimitError,
                       match="limited to 100000 bytes .*MAX_DECOMPRESSED_SIZE.* 80000 are used"):
        C.decompress_pooled("zstd", chunk, budget=budget)


# ---------------------------------------------------------------------------------------------
# legacy (magic 1) gzip message sets: every wrapper draws from the record set's budget


def legacy_message(offset, attrs, key, value, timestamp=7):
    """One magic 1 message as the protocol guide defines it (CRC32 over magic..end)."""
    body = struct.pack(">bbq", 1, attrs, timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def gzip_wrapper(base, count, size):
    """A gzip wrapper holding `count` messages (offsets base..) of `size`-byte values."""
    inner = b"".join(legacy_message(i, 0, None, b"%08d" % (base + i) + b"\x00" * (size - 8))
                     for i in range(count))
    return legacy_message(base + count - 1, 1, None, gzip.compress(inner, mtime=0))


WRAPPERS, PER_WRAPPER, SIZE = 40, 500, 500  # ~0.26 MB decompressed per wrapper, 10 MB in all


@pytest.fixture(scope="module")
def legacy_set():
    return [gzip_wrapper(w * PER_WRAPPER, PER_WRAPPER, SIZE) for w in range(WRAPPERS)]


def test_legacy_wrappers_share_one_cap(rec, legacy_set, monkeypatch):
    data = b"".join(legacy_set)
    assert len(data) * 30 < WRAPPERS * PER_WRAPPER * SIZE  # ~10 MB of records in 0.26 MB
    monkeypatch.setattr(C, "MAX_DECOMPRESSED_SIZE", 1 << 20)  # each wrapper alone fits
    (first,) = rec.decode_batches(legacy_set[0])
    assert len(first.records()) == PER_WRAPPER
    budget = C.DecompressionBudget()
    with pytest.raises(DecompressionLimitError, match="limited to 1048576 bytes"):
        rec.decode_batches(data, budget=budget)
    assert budget.used <= 1 << 20


def _drain(decode, sets, limit, fetch_offset=0):
    """Fetch-decode loop: each round decodes the wrappers from the one holding fetch_offset;
    returns every value read and the number of rounds."""
    starts = [w * PER_WRAPPER for w in range(len(sets))]
    values, rounds = [], 0
    while fetch_offset < len(sets) * PER_WRAPPER:
        rounds += 1
        data = b"".join(sets[starts.index(fetch_offset // PER_WRAPPER * PER_WRAPPER):])
        d = decode(data, fetch_offset, budget=C.DecompressionBudget(limit))
        assert d.error is None
        assert d.next_offset > fetch_offset
        for seg in d.segments:
            values += [v[:8] for v in seg.cols.value_list()[seg.start:seg.stop]]
        fetch_offset = d.next_offset
    return values, rounds


def test_decode_partition_stops_at_the_budget_and_resumes(rec, legacy_set, monkeypatch):
    monkeypatch.setattr(fetch_decode, "decode_batches", rec.decode_batches)
    values, rounds = _drain(fetch_decode.decode_partition, legacy_set, 1 << 20)
    # every record exactly once, in order, in rounds of at most ~1 MiB of decompressed data
    assert values == [b"%08d" % i for i in range(WRAPPERS * PER_WRAPPER)]
    per_wrapper = PER_WRAPPER * (SIZE + 34)
    assert rounds == -(-WRAPPERS // ((1 << 20) // per_wrapper))


def test_decode_partition_v2_batches_share_the_budget(rec, monkeypatch):
    monkeypatch.setattr(fetch_decode, "decode_batches", rec.decode_batches)
    batches = [rec.encode_batch([b"%06d" % (b * 10 + i) + b"\x00" * 50_000 for i in range(10)],
                                timestamps=1, base_offset=b * 10, compression="zstd")
               for b in range(8)]
    data = b"".join(batches)
    d = fetch_decode.decode_partition(data, 0, budget=C.DecompressionBudget(1_200_000))
    assert d.error is None
    assert d.next_offset == 20 and d.count == 20  # two batches of ~0.5 MB fit, the third not
    d = fetch_decode.decode_partition(data, 0, budget=C.DecompressionBudget(400_000))
    assert isinstance(d.error, DecompressionLimitError)  # the first batch alone is too big
    assert d.next_offset == 0 and d.count == 0
    assert "limited to 400000 bytes" in str(d.error)


# ---------------------------------------------------------------------------------------------
# legacy compressed messages of tiny records: the records of one record set share one cap too


def tiny_wrapper(offset, count):
    """A gzip wrapper of `count` empty 34-byte magic 1 messages (all at inner offset 0)."""
    return legacy_message(offset, 1, None,
                          gzip.compress(legacy_message(0, 0, None, b"") * count, mtime=0))


def test_legacy_records_share_one_cap(rec, monkeypatch):
    monkeypatch.setattr(C, "MAX_DECOMPRESSED_RECORDS", 1000)
    two = tiny_wrapper(399, 400) + tiny_wrapper(799, 400)
    budget = C.DecompressionBudget()
    assert [len(b) for b in rec.decode_batches(two, budget=budget)] == [400, 400]
    assert budget.records == 800
    third = tiny_wrapper(1199, 400)
    budget = C.DecompressionBudget()
    with pytest.raises(DecompressionLimitError,
                       match=r"compressed message of 201\+ records: .* limited to 1000 records "
                             r"together \(kafka_fast.codecs.compression.MAX_DECOMPRESSED_RECORDS\) "
                             rf"and 800 are used \(at byte {len(two)}\)"):
        rec.decode_batches(two + third, budget=budget)
    assert budget.records == 800
    # one message alone over the cap
    with pytest.raises(DecompressionLimitError, match=r"of 1001\+ records: .* 0 are used"):
        rec.decode_batches(tiny_wrapper(1499, 1500))
    # the cap is the budget's own when it has one
    assert len(rec.decode_batches(tiny_wrapper(1499, 1500),
                                  budget=C.DecompressionBudget(record_limit=1500))[0]) == 1500


def test_decode_partition_stops_at_the_record_cap_and_resumes(rec, monkeypatch):
    monkeypatch.setattr(fetch_decode, "decode_batches", rec.decode_batches)
    sets = [gzip_wrapper(w * 300, 300, 8) for w in range(10)]
    starts = [w * 300 for w in range(10)]
    values, offset, rounds = [], 0, 0
    while offset < 3000:
        rounds += 1
        data = b"".join(sets[starts.index(offset):])
        d = fetch_decode.decode_partition(data, offset,
                                          budget=C.DecompressionBudget(record_limit=1000))
        assert d.error is None and d.next_offset > offset
        for seg in d.segments:
            values += seg.cols.value_list()[seg.start:seg.stop]
        offset = d.next_offset
    assert values == [b"%08d" % i for i in range(3000)]
    assert rounds == 4  # three wrappers (900 records) a round
    # a first message alone over the cap is the error, reported at its offset
    d = fetch_decode.decode_partition(tiny_wrapper(1499, 1500) + sets[0], 0,
                                      budget=C.DecompressionBudget(record_limit=1000))
    assert isinstance(d.error, DecompressionLimitError) and d.count == 0
    assert d.next_offset == 0


DECODE_TINY_RECORDS = """
import gzip, struct, sys, zlib
from kafka_fast.codecs import compression as C
from kafka_fast.errors import DecompressionLimitError
import kafka_fast.{module} as rec

def legacy_message(offset, attrs, value):
    body = struct.pack(">bbq", 1, attrs, 7) + struct.pack(">i", -1)
    body += struct.pack(">i", len(value)) + value
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg

per = (32 << 20) // 34                       # 32 MiB of empty messages in each wrapper
inner = gzip.compress(legacy_message(0, 0, b"") * per, compresslevel=9, mtime=0)
data = b"".join(legacy_message((w + 1) * per - 1, 1, inner) for w in range(8))
print(len(data), per * 8, flush=True)
budget = C.DecompressionBudget()
try:
    batches = rec.decode_batches(data, budget=budget)
    print("decoded", sum(len(b) for b in batches))
except DecompressionLimitError as exc:
    print("limit", budget.records, exc)
# this process's own peak (ru_maxrss would include the parent's, carried across exec)
print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def test_a_small_legacy_set_of_tiny_records_stops_at_the_record_cap(rec):
    """0.8 MB of gzip wrappers under the 256 MiB size cap, 7.9M records in all: decoding
    stops at MAX_DECOMPRESSED_RECORDS, in bounded memory (it decoded all 7.9M)."""
    import os
    import subprocess
    import sys

    code = DECODE_TINY_RECORDS.format(module=rec.__name__.removeprefix("kafka_fast."))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        out, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("decoding did not end within 300 s") from None
    assert proc.returncode == 0, out
    size_line, result, peak = out.splitlines()
    peak_kib = int(peak)
    size, records = map(int, size_line.split())
    assert size < 1_200_000 and records > 7_800_000 and records * 34 < C.MAX_DECOMPRESSED_SIZE
    # the first wrapper alone is over the cap, and decoding stops at the cap inside it
    assert result.startswith("limit 0 ") and "message of 262145+ records" in result, result
    assert "limited to 262144 records together" in result
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        # Under the sanitizer pass every allocation carries ASan's redzones and quarantine
        # (PYTHONMALLOC=malloc), so the memory bound is the normal builds' to show.
        assert peak_kib < 200 * 1024, f"peak RSS {peak_kib // 1024} MiB"
