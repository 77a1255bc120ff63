"""Record headers on encode: a dict or a list of (key, value) tuples (as confluent-kafka
takes them); values bytes-like, str (utf-8) or None; anything else is a TypeError naming the
header. Both implementations, bulk and incremental encoding."""

from __future__ import annotations

import numpy as np
import pytest


def headers_of(rec, data):
    return [r.headers for b in rec.decode_batches(data) for r in b.records()]


def build_one(rec, headers):
    b = rec.RecordBatchBuilder()
    assert b.append(b"v", timestamp=1, headers=headers)
    return b.build()


def encode_one(rec, headers):
    return rec.encode_batch([b"v"], timestamps=1, headers=headers)


ENCODERS = [encode_one, build_one]


@pytest.mark.parametrize("encode", ENCODERS)
def test_dict_headers(rec, encode):
    headers = {"a": b"1", "b": "zwei", "c": None, "d": bytearray(b"4"),
               "e": np.frombuffer(b"55", np.uint8), "f": memoryview(b"6")}
    assert headers_of(rec, encode(rec, headers)) == [[
        ("a", b"1"), ("b", b"zwei"), ("c", None), ("d", b"4"), ("e", b"55"),
        ("f", b"6")]]


@pytest.mark.parametrize("encode", ENCODERS)
def test_list_of_pairs(rec, encode):
    headers = [("a", b"1"), ("a", b"2"), ("é", "ü")]
    assert headers_of(rec, encode(rec, headers)) == [
        [("a", b"1"), ("a", b"2"), ("é", "ü".encode())]]


@pytest.mark.parametrize("encode", ENCODERS)
@pytest.mark.parametrize("bad", [5, 0, True, 2.5, np.int64(7), object()])
@pytest.mark.parametrize("as_dict", [True, False])
def test_non_bytes_value_is_a_type_error(rec, encode, bad, as_dict):
    headers = {"ok": b"x", "bad-one": bad} if as_dict else [("ok", b"x"), ("bad-one", bad)]
    with pytest.raises(TypeError, match=r"header 'bad-one': value must be bytes-like, str or "
                                        rf"None, not {type(bad).__name__}"):
        encode(rec, headers)


@pytest.mark.parametrize("encode", ENCODERS)
@pytest.mark.parametrize("bad", [5, None])
def test_bad_key_is_a_type_error(rec, encode, bad):
    with pytest.raises(TypeError, match=rf"header {bad!r}: key must be"):
        encode(rec, [(bad, b"x")])


@pytest.mark.parametrize("encode", ENCODERS)
def test_not_a_pair(rec, encode):
    with pytest.raises(TypeError, match="a header must be a .key, value. tuple"):
        encode(rec, [("a", b"1", b"2")])


def test_non_contiguous_value_is_refused(rec):
    strided = np.arange(10, dtype=np.uint8)[::2]
    with pytest.raises(TypeError, match="header 'h': value must be bytes-like"):
        encode_one(rec, {"h": strided})


def test_per_record_dicts_and_lists(rec):
    data = rec.encode_batch([b"a", b"b", b"c", b"d"], timestamps=1,
                            headers=[{"x": b"1"}, None, [("y", b"2")], {}])
    assert headers_of(rec, data) == [[("x", b"1")], [], [("y", b"2")], []]


def test_shared_dict_applies_to_every_record(rec):
    data = rec.encode_batch([b"a", b"b"], timestamps=1, headers={"s": b"1"})
    assert headers_of(rec, data) == [[("s", b"1")], [("s", b"1")]]


def test_native_and_pure_bytes_equal(native, pure):
    for headers in ({"a": b"1", "b": None}, [("k", "v"), ("k", bytearray(b"w"))]):
        assert encode_one(native, headers) == encode_one(pure, headers)
        assert build_one(native, headers) == build_one(pure, headers)
