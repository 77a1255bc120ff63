"""Every entry point that takes a buffer sizes it from the buffer protocol, never from
``len()``: objects whose ``len()`` exceeds their buffer (a numpy array of shape (N, 0), a
bytes or bytearray subclass with a lying ``__len__``) give the same result as the plain bytes,
or a clear error. Each case runs in a child interpreter, so a crash fails the test."""

from __future__ import annotations

import ast

import pytest
from isolated import run_isolated

PRELUDE = '''
import numpy as np
from kafka_fast import records as R
from kafka_fast.codecs.crc import crc32c
from kafka_fast._impl import load
P, _ = load("_partition", "partition")
COLS, _ = load("_columns", "columns")

class LieBytes(bytes):
    def __len__(self):
        return 50_000_000

class LieArray(bytearray):
    def __len__(self):
        return 50_000_000

EMPTY_ROWS = np.zeros((50_000_000, 0), dtype=np.uint8)  # len() 50M, 0 bytes
assert len(EMPTY_ROWS) == 50_000_000 and EMPTY_ROWS.nbytes == 0

def outcome(f):
    try:
        return f()
    except Exception as exc:
        return type(exc).__name__

def fields(data):
    return [(r.offset, r.key, r.value, r.headers)
            for b in R.decode_batches(data) for r in b.records()]

BATCH = R.encode_batch([b"v0", b"v1"], [b"k0", None], timestamps=7, headers=[("h", b"x")])
out = {}
'''


def run(body: str, rec_impl: str) -> dict:
    code = PRELUDE + body + "\nprint(repr(out))\n"
    return ast.literal_eval(run_isolated(code, pure=rec_impl == "pure").strip())


@pytest.fixture(params=["native", "pure"])
def impl(request):
    return request.param


def test_patch_producer_fields(impl):
    out = run('''
good = R.patch_producer_fields(BATCH, 5, 1, 9)
out["rows"] = outcome(lambda: R.patch_producer_fields(EMPTY_ROWS, 5, 1, 9))
out["lie_bytes"] = outcome(lambda: R.patch_producer_fields(LieBytes(BATCH), 5, 1, 9)) == good
out["lie_array"] = outcome(lambda: R.patch_producer_fields(LieArray(BATCH), 5, 1, 9)) == good
out["short"] = outcome(lambda: R.patch_producer_fields(LieBytes(BATCH[:30]), 5, 1, 9))
out["fields"] = fields(good)
''', impl)
    assert out == {
        "rows": "ValueError", "lie_bytes": True, "lie_array": True, "short": "ValueError",
        "fields": [(0, b"k0", b"v0", [("h", b"x")]), (1, None, b"v1", [("h", b"x")])],
    }


def test_decode_batches(impl):
    out = run('''
out["lie_bytes"] = fields(LieBytes(BATCH))
out["lie_array"] = fields(LieArray(BATCH))
out["rows"] = outcome(lambda: R.decode_batches(EMPTY_ROWS))
out["varint"] = outcome(lambda: R.decode_varint(LieBytes(b"\\x04"), 0))
out["varint_past_end"] = outcome(lambda: R.decode_varint(LieBytes(b"\\x04"), 1))
''', impl)
    expected = [(0, b"k0", b"v0", [("h", b"x")]), (1, None, b"v1", [("h", b"x")])]
    assert out["lie_bytes"] == expected
    assert out["lie_array"] == expected
    assert out["rows"] == []
    assert out["varint"] == (2, 1)
    assert out["varint_past_end"] in ("CorruptRecordError", "IndexError")


def test_encode_batch_and_builder(impl):
    out = run('''
data = R.encode_batch([LieBytes(b"abc"), LieArray(b"de")], [LieArray(b"k"), None],
                      timestamps=7, headers=[("h", LieBytes(b"x"))])
out["list"] = fields(data)
packed = (LieBytes(b"abcdef"), np.array([0, 2, 6], dtype=np.int64))
out["packed"] = fields(R.encode_batch(packed, timestamps=7))
out["packed_rows"] = outcome(
    lambda: R.encode_batch((EMPTY_ROWS, np.array([0, 5], dtype=np.int64)), timestamps=7))
out["zero_width_rows"] = fields(R.encode_batch(np.zeros((3, 0), np.uint8), timestamps=7))
b = R.RecordBatchBuilder()
b.append(LieBytes(b"val"), key=LieArray(b"key"), timestamp=7, headers={"h": LieArray(b"y")})
out["builder"] = fields(b.build())
''', impl)
    assert out == {
        "list": [(0, b"k", b"abc", [("h", b"x")]), (1, None, b"de", [("h", b"x")])],
        "packed": [(0, None, b"ab", []), (1, None, b"cdef", [])],
        "packed_rows": "ValueError",
        "zero_width_rows": [(0, None, b"", []), (1, None, b"", []), (2, None, b"", [])],
        "builder": [(0, b"key", b"val", [("h", b"y")])],
    }


def test_crc32c(impl):
    out = run('''
out["lie_bytes"] = crc32c(LieBytes(b"123456789"))
out["lie_array"] = crc32c(LieArray(b"123456789"))
out["rows"] = crc32c(EMPTY_ROWS)
''', impl)
    assert out == {"lie_bytes": 0xE3069283, "lie_array": 0xE3069283, "rows": 0}


def test_partitioner(impl):
    out = run('''
plain = P.murmur2(b"abc")
out["murmur2"] = P.murmur2(LieBytes(b"abc")) == plain == P.murmur2(LieArray(b"abc"))
out["key"] = P.partition_key(LieArray(b"abc"), 10, 3) == P.partition_key(b"abc", 10, 3)
out["packed_rows"] = outcome(
    lambda: P.partition_column((EMPTY_ROWS, np.array([0, 5], dtype=np.int64)), 4, 3))
packed = (LieBytes(b"abcdef"), np.array([0, 2, 6], dtype=np.int64))
out["packed"] = P.partition_column(packed, 7, 3).tolist() == [
    P.partition_key(b"ab", 7, 3), P.partition_key(b"cdef", 7, 3)]
out["gather"] = outcome(lambda: P.gather_packed(
    (EMPTY_ROWS, np.array([0, 3], dtype=np.int64)), np.array([0]), 0, 1))
out["sizes"] = P.row_sizes([LieBytes(b"abc"), None, EMPTY_ROWS, LieArray(b"de"), b"f", "gh"]
                           ).tolist()
''', impl)
    assert out == {"murmur2": True, "key": True, "packed_rows": "ValueError", "packed": True,
                   "gather": "ValueError", "sizes": [3, 0, 0, 2, 1, 2]}


def test_append_messages(impl):
    out = run('''
from kafka_fast.records import Columns
def cols(kdata, koffs):
    return Columns(np.array([5], np.int64), np.array([9], np.int64),
                   (kdata, np.array(koffs, np.int64)),
                   (np.frombuffer(b"val", np.uint8), np.array([0, 3], np.int64)),
                   np.zeros(1, np.bool_), np.zeros(1, np.bool_), None)
msgs = []
out["rows"] = outcome(lambda: COLS.append_messages(msgs, "t", 0, cols(EMPTY_ROWS, [0, 4]),
                                                   0, 1, 1, -1))
out["beyond"] = outcome(lambda: COLS.append_messages(
    msgs, "t", 0, cols(np.frombuffer(b"ab", np.uint8), [0, 3]), 0, 1, 1, -1))
out["appended"] = len(msgs)
''', impl)
    assert out == {"rows": "ValueError", "beyond": "ValueError", "appended": 0}
