"""Partition choice: hashes against references written from the published algorithms, and the
compiled module against its pure-Python twin."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from kafka_fast._pure import partition as pure

try:
    from kafka_fast._native import _partition as native
except ImportError:  # not built: the pure twin is still tested
    native = None

IMPLS = [pytest.param(pure, id="pure")]
if native is not None:
    IMPLS.append(pytest.param(native, id="native"))

# Published vectors of the Java client's Utils.murmur2 (Kafka's UtilsTest).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def java_murmur2(data: bytes) -> int:
    """Transcription of org.apache.kafka.common.utils.Utils.murmur2 with Java int semantics:
    signed bytes, wrapping multiplication, >>> as an unsigned shift."""
    length = len(data)
    seed = _int32(0x9747B28C)
    m = 0x5BD1E995
    r = 24
    h = _int32(seed ^ length)
    signed = [b - 256 if b > 127 else b for b in data]
    for i in range(length // 4):
        i4 = i * 4
        k = ((signed[i4] & 0xFF) + ((signed[i4 + 1] & 0xFF) << 8)
             + ((signed[i4 + 2] & 0xFF) << 16) + ((signed[i4 + 3] & 0xFF) << 24))
        k = _int32(k * m)
        k = _int32(k ^ ((k & 0xFFFFFFFF) >> r))
        k = _int32(k * m)
        h = _int32(h * m)
        h = _int32(h ^ k)
    rem = length % 4
    base = length & ~3
    if rem == 3:
        h = _int32(h ^ ((signed[base + 2] & 0xFF) << 16))
    if rem >= 2:
        h = _int32(h ^ ((signed[base + 1] & 0xFF) << 8))
    if rem >= 1:
        h = _int32(h ^ (signed[base] & 0xFF))
        h = _int32(h * m)
    h = _int32(h ^ ((h & 0xFFFFFFFF) >> 13))
    h = _int32(h * m)
    h = _int32(h ^ ((h & 0xFFFFFFFF) >> 15))
    return h


def java_partition(key: bytes, n: int) -> int:
    """Java's BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % n."""
    return (java_murmur2(key) & 0x7FFFFFFF) % n


def librdkafka_fnv1a(data: bytes) -> int:
    """rd_fnv1a: 32-bit FNV-1a on a signed int, absolute value taken at the end."""
    h = _int32(0x811C9DC5)
    for b in data:
        h = _int32((h ^ b) * 0x01000193)
    if h < 0:
        h = _int32(-h)
    return h & 0xFFFFFFFF


def _keys(count: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randrange(0, 40)) for _ in range(count)]


def test_reference_matches_published_java_vectors():
    for key, expected in JAVA_VECTORS.items():
        assert java_murmur2(key) == expected


@pytest.mark.parametrize("impl", IMPLS)
def test_murmur2_matches_java(impl):
    for key, expected in JAVA_VECTORS.items():
        assert impl.murmur2(key) == expected
    for key in _keys(1000):
        assert impl.murmur2(key) == java_murmur2(key)


@pytest.mark.parametrize("impl", IMPLS)
def test_murmur2_partition_matches_java_for_1000_keys(impl):
    keys = [f"key-{i}".encode() for i in range(1000)]
    algo = impl.algorithm_id("murmur2_random")
    for n in (1, 3, 7, 12, 100):
        expected = [java_partition(k, n) for k in keys]
        assert [impl.partition_key(k, n, algo) for k in keys] == expected
        assert impl.partition_column(keys, n, algo).tolist() == expected


@pytest.mark.parametrize("impl", IMPLS)
def test_fnv1a_and_consistent(impl):
    for key in _keys(500) + [b"\xff" * 9]:
        assert impl.fnv1a(key) == librdkafka_fnv1a(key)
        assert impl.consistent(key) == zlib.crc32(key)
        assert impl.partition_key(key, 5, impl.algorithm_id("fnv1a")) == librdkafka_fnv1a(key) % 5
        assert impl.partition_key(key, 5, impl.algorithm_id("consistent")) == zlib.crc32(key) % 5


@pytest.mark.parametrize("impl", IMPLS)
def test_null_and_empty_keys_follow_librdkafka(impl):
    a = impl.algorithm_id
    # *_random: null keys are left to the sticky partition; plain variants hash "no bytes".
    assert impl.partition_key(None, 6, a("murmur2_random")) == -1
    assert impl.partition_key(None, 6, a("fnv1a_random")) == -1
    assert impl.partition_key(None, 6, a("consistent_random")) == -1
    assert impl.partition_key(b"", 6, a("consistent_random")) == -1
    assert impl.partition_key(b"", 6, a("murmur2_random")) == java_partition(b"", 6)
    assert impl.partition_key(None, 6, a("murmur2")) == java_partition(b"", 6)
    assert impl.partition_key(None, 6, a("consistent")) == 0
    assert impl.partition_key(None, 6, a("fnv1a")) == librdkafka_fnv1a(b"") % 6
    assert impl.partition_key(b"abc", 6, a("random")) == -1


@pytest.mark.parametrize("impl", IMPLS)
def test_bad_arguments(impl):
    with pytest.raises(ValueError, match="unknown partitioner 'nope'"):
        impl.algorithm_id("nope")
    with pytest.raises(ValueError, match="num_partitions must be positive"):
        impl.partition_key(b"k", 0, 3)
    with pytest.raises(TypeError):
        impl.partition_key(12, 3, 3)
    with pytest.raises(ValueError, match="outside 0..2"):
        impl.group_by_partition(np.array([0, 3], dtype=np.int32), 3)


@pytest.mark.parametrize("impl", IMPLS)
def test_columns_of_every_shape_agree(impl):
    keys = [f"k{i:08d}".encode() for i in range(300)]  # 9 bytes each
    algo = impl.algorithm_id("murmur2_random")
    expected = [java_partition(k, 9) for k in keys]
    array = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(300, 9)
    assert impl.partition_column(array, 9, algo).tolist() == expected
    offsets = np.arange(0, 301 * 9, 9, dtype=np.int64)
    packed = (b"".join(keys), offsets)
    assert impl.partition_column(packed, 9, algo).tolist() == expected
    nulls = np.zeros(300, dtype=np.bool_)
    nulls[::7] = True
    packed_nulls = (b"".join(keys), offsets, nulls)
    got = impl.partition_column(packed_nulls, 9, algo).tolist()
    assert got == [-1 if nulls[i] else expected[i] for i in range(300)]
    with_none = [None if nulls[i] else k for i, k in enumerate(keys)]
    assert impl.partition_column(with_none, 9, algo).tolist() == got


@pytest.mark.parametrize("impl", IMPLS)
def test_group_gather_and_chunks(impl):
    rng = np.random.default_rng(3)
    parts = rng.integers(0, 5, size=1000).astype(np.int32)
    order, starts = impl.group_by_partition(parts, 5)
    assert starts[0] == 0 and starts[-1] == 1000
    for p in range(5):
        idx = order[starts[p]:starts[p + 1]]
        assert idx.tolist() == np.flatnonzero(parts == p).tolist()
    values = [bytes([i % 256]) * (i % 13) for i in range(1000)]
    offsets = np.zeros(1001, dtype=np.int64)
    offsets[1:] = np.cumsum([len(v) for v in values])
    nulls = np.zeros(1000, dtype=np.bool_)
    nulls[5] = True
    packed = (b"".join(values), offsets, nulls)
    for p in range(5):
        data, offs, gnulls = impl.gather_packed(packed, order, int(starts[p]), int(starts[p + 1]))
        idx = order[starts[p]:starts[p + 1]]
        rows = [bytes(data[offs[j]:offs[j + 1]]) for j in range(len(idx))]
        assert rows == [values[i] for i in idx]
        assert gnulls.tolist() == [bool(nulls[i]) for i in idx]
    rows = np.arange(1000 * 3, dtype=np.int64).astype(np.uint8).reshape(1000, 3)
    for p in range(5):
        lo, hi = int(starts[p]), int(starts[p + 1])
        want = rows[order[lo:hi]]
        assert (impl.gather_rows(rows, order, lo, hi) == want).all()
        out = np.zeros((hi - lo, 3), dtype=np.uint8)
        assert impl.gather_rows(rows, order, lo, hi, out) is out
        assert (out == want).all()
    with pytest.raises(ValueError, match="expected"):
        impl.gather_rows(rows, order, 0, 4, np.zeros((3, 3), dtype=np.uint8))
    with pytest.raises(IndexError):
        impl.gather_rows(rows, np.array([0, 1000], dtype=np.int64), 0, 2)
    assert impl.row_sizes(packed).tolist() == [0 if i == 5 else len(v) for i, v in enumerate(values)]
    assert impl.row_sizes([b"ab", None, b""]).tolist() == [2, 0, 0]
    assert impl.chunk_ends(np.array([5, 5, 5, 20, 1, 1], dtype=np.int64), 10, 100).tolist() == [2, 3, 4, 6]
    assert impl.chunk_ends(np.ones(7, dtype=np.int64), 100, 3).tolist() == [3, 6, 7]
    assert impl.chunk_ends(np.ones(0, dtype=np.int64), 100, 3).tolist() == []
    with pytest.raises(ValueError, match="non-decreasing"):
        impl.partition_column((b"abc", np.array([0, 2, 1], dtype=np.int64)), 3, 3)
    with pytest.raises(ValueError, match="within the data buffer"):
        impl.partition_column((b"abc", np.array([0, 9], dtype=np.int64)), 3, 3)


@pytest.mark.parametrize("impl", IMPLS)
def test_list_columns_gather_and_type_scan(impl):
    """List columns: rows in partition order (the same objects), and the scan that finds
    items produce_batch must convert (neither None nor exactly bytes)."""
    class Sub(bytes):
        pass

    values = [b"v%d" % i if i % 7 else None for i in range(500)]
    order = np.random.default_rng(5).permutation(500).astype(np.int64)
    got = impl.gather_list(values, order, 100, 350)
    assert got == [values[i] for i in order[100:350]]
    assert all(a is values[i] for a, i in zip(got, order[100:350], strict=True))
    assert impl.gather_list(values, order, 3, 3) == []
    with pytest.raises(IndexError):
        impl.gather_list(values, order, 400, 501)
    with pytest.raises(IndexError):
        impl.gather_list(values, np.array([0, 500], dtype=np.int64), 0, 2)
    with pytest.raises(IndexError):
        impl.gather_list(values, np.array([-1], dtype=np.int64), 0, 1)
    mixed = [b"a", None, bytearray(b"b"), b"c", Sub(b"d"), "e", None]
    assert impl.first_not_bytes(mixed) == 2
    assert impl.first_not_bytes(mixed, 3) == 4
    assert impl.first_not_bytes(mixed, 5) == 5
    assert impl.first_not_bytes(mixed, 6) == -1
    assert impl.first_not_bytes(mixed, 99) == -1
    assert impl.first_not_bytes([]) == -1
    assert impl.first_not_bytes(values) == -1
