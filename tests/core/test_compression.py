"""Codecs: round trips, interoperability with other implementations of Kafka's framings, and
bounded decompression of forged or oversized input."""

from __future__ import annotations

import gzip
import os
import random
import struct
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor

import cramjam
import lz4.frame
import pytest
import zstandard
from kafka import codec as kp_codec

from kafka_fast.codecs import compression as C
from kafka_fast.errors import CorruptRecordError

PAYLOADS = [b"", b"x", os.urandom(1000), b"kafka " * 20000, os.urandom(70000) * 2]
CODECS = ["gzip", "snappy", "lz4", "zstd"]


def test_codec_table():
    assert C.CODEC_IDS == {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    assert [C.codec_id(x) for x in ("none", "GZIP", None, 3, "zstd")] == [0, 1, 0, 3, 4]
    for bad in ("brotli", 5, -1, True, 2.0):
        with pytest.raises(ValueError):
            C.codec_id(bad)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", range(len(PAYLOADS)))
def test_round_trip(codec, size):
    data = PAYLOADS[size]
    packed = C.compress(codec, data)
    assert C.decompress(codec, packed) == data
    with C.decompress_pooled(codec, packed) as lease:
        assert bytes(lease.view) == data


@pytest.mark.parametrize("codec,level", [("gzip", 1), ("gzip", 9), ("lz4", 9), ("zstd", 1),
                                         ("zstd", 19), ("zstd", -5)])
def test_levels(codec, level):
    data = PAYLOADS[3]
    assert C.decompress(codec, C.compress(codec, data, level)) == data


def test_levels_change_output():
    data = b"".join(b"key-%d value-%d " % (i, i * i % 977) for i in range(20000))
    assert len(C.compress("zstd", data, 19)) < len(C.compress("zstd", data, -5))
    assert len(C.compress("gzip", data, 9)) < len(C.compress("gzip", data, 1))


def test_gzip_is_rfc1952_and_reads_concatenated_members():
    data = PAYLOADS[3]
    assert gzip.decompress(C.compress("gzip", data)) == data
    assert C.decompress("gzip", gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


def test_snappy_xerial_interop_with_kafka_python():
    data = PAYLOADS[4]
    ours = C.compress("snappy", data)
    assert ours[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert kp_codec.snappy_decode(ours) == data
    theirs = kp_codec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=4096)
    assert C.decompress("snappy", theirs) == data


def test_snappy_raw_accepted():
    data = PAYLOADS[3]
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert C.decompress("snappy", raw) == data


def test_lz4_is_a_kafka_frame():
    frame = C.compress("lz4", PAYLOADS[4])
    assert frame[:4] == b"\x04\x22\x4d\x18"
    flg = frame[4]
    assert flg & 0x20  # independent blocks (Kafka rejects linked blocks)
    assert not flg & 0x08  # no content size
    assert lz4.frame.decompress(frame) == PAYLOADS[4]


@pytest.mark.parametrize("kwargs", [
    {"store_size": False}, {"store_size": True}, {"content_checksum": True},
    {"block_checksum": True, "store_size": True},
])
def test_xxh32_matches_lz4_header_checksum(kwargs):
    frame = lz4.frame.compress(b"abc" * 100, **kwargs)
    hc_pos = 6 + (8 if frame[4] & 0x08 else 0)
    assert frame[hc_pos] == (C._xxh32_short(frame[4:hc_pos]) >> 8) & 0xFF


def test_legacy_lz4_broken_header_checksum():
    """Magic 0 producers computed the header checksum over magic + descriptor."""
    data = PAYLOADS[3]
    frame = bytearray(lz4.frame.compress(data, block_linked=False, store_size=False))
    frame[6] = (C._xxh32_short(bytes(frame[0:6])) >> 8) & 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(bytes(frame))
    assert C.decompress("lz4", bytes(frame), legacy_lz4=True) == data


def test_zstd_multiple_frames():
    a, b = zstandard.ZstdCompressor().compress(b"one"), zstandard.ZstdCompressor(
        write_content_size=False).compress(b"two")
    assert C.decompress("zstd", a + b) == b"onetwo"


@pytest.mark.parametrize("codec", CODECS)
def test_max_size_enforced(codec):
    packed = C.compress(codec, b"\x00" * 300_000)
    assert C.decompress(codec, packed, max_size=300_000) == b"\x00" * 300_000
    with pytest.raises(CorruptRecordError) as err:
        C.decompress(codec, packed, max_size=299_999)
    assert "more than 299999 bytes" in str(err.value)


def test_forged_zstd_content_size_not_trusted():
    frame = bytearray(zstandard.ZstdCompressor().compress(b"hello"))
    # frame header descriptor 0x20 = single segment, 1-byte size; make it 8-byte size = 2**40
    assert frame[4] & 0xC0 == 0
    forged = frame[:4] + bytes([frame[4] | 0xC0]) + struct.pack("<Q", 1 << 40) + frame[6:]
    with pytest.raises(CorruptRecordError):
        C.decompress("zstd", bytes(forged))
    forged_small = frame[:4] + bytes([frame[4] | 0xC0]) + struct.pack("<Q", 100 << 20) + frame[6:]
    with pytest.raises(CorruptRecordError):
        C.decompress("zstd", bytes(forged_small))


def test_forged_snappy_length_not_trusted():
    raw = bytes(cramjam.snappy.compress_raw(b"hello world"))
    forged = b"\xff\xff\xff\x7f" + raw[1:]  # claims ~256 MiB from a dozen bytes
    with pytest.raises(CorruptRecordError) as err:
        C.decompress("snappy", forged)
    assert "declares" in str(err.value)


def test_forged_lz4_content_size_not_trusted():
    frame = lz4.frame.compress(b"hello" * 10, store_size=True, block_linked=False)
    forged = bytearray(frame)
    forged[6:14] = struct.pack("<Q", 1 << 40)
    forged[14] = (C._xxh32_short(bytes(forged[4:14])) >> 8) & 0xFF
    with pytest.raises(CorruptRecordError):
        C.decompress("lz4", bytes(forged))


@pytest.mark.parametrize("codec", CODECS)
def test_truncated_and_garbage_raise(codec):
    packed = C.compress(codec, PAYLOADS[2])
    for cut in (1, len(packed) // 2, len(packed) - 1):
        with pytest.raises(CorruptRecordError):
            C.decompress(codec, packed[:cut])
    with pytest.raises(CorruptRecordError):
        C.decompress(codec, b"\x82SNAPPY\x00garbage-garbage-garbage" if codec == "snappy"
                     else b"garbage-garbage-garbage")


def test_xerial_block_length_beyond_data():
    bad = C.compress("snappy", b"abc")[:16] + struct.pack(">i", 1000) + b"xx"
    with pytest.raises(CorruptRecordError):
        C.decompress("snappy", bad)


def test_deflate_bomb_is_capped():
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    packed = bomb.compress(b"\x00" * (8 << 20)) + bomb.flush()
    with pytest.raises(CorruptRecordError):
        C.decompress("gzip", packed, max_size=1 << 20)


_REFERENCE_DECODERS = {
    "gzip": gzip.decompress,
    "snappy": kp_codec.snappy_decode,
    "lz4": lz4.frame.decompress,
    "zstd": lambda packed: zstandard.ZstdDecompressor().decompressobj().decompress(packed),
}


def _thread_payload(thread: int, round_: int) -> bytes:
    """Compressible bytes unique to (thread, round), 40-120 KiB."""
    rng = random.Random(thread * 1000 + round_)
    words = [b"t%d-r%d-w%d " % (thread, round_, i) for i in range(64)]
    out = bytearray()
    while len(out) < 40_000 + 10_000 * (thread % 9):
        out += rng.choice(words) if rng.random() < 0.9 else rng.randbytes(rng.randrange(1, 64))
    return bytes(out)


@pytest.mark.parametrize("codec", CODECS)
def test_threads_compress_and_decompress_at_once(codec):
    """Several threads compress and decompress distinct payloads at the same time (zstd at
    several levels): every output decodes exactly, by this module and by the reference."""
    threads, rounds = 6, 12
    levels = [None, 1, 3] if codec == "zstd" else [None]
    start = threading.Barrier(threads)

    def work(thread: int) -> list[tuple[int, int, bytes, bytes, bytes]]:
        done = []
        start.wait(timeout=30)
        for r in range(rounds):
            data = _thread_payload(thread, r)
            packed = C.compress(codec, data, levels[(thread + r) % len(levels)])
            done.append((thread, r, data, packed, C.decompress(codec, packed)))
        return done

    with ThreadPoolExecutor(threads) as pool:
        results = [item for fut in [pool.submit(work, i) for i in range(threads)]
                   for item in fut.result(timeout=120)]
    assert len(results) == threads * rounds
    reference = _REFERENCE_DECODERS[codec]
    for thread, r, data, packed, ours in results:
        assert data == _thread_payload(thread, r)
        assert ours == data, (thread, r)
        assert reference(packed) == data, (thread, r)
