"""Kafka compression codecs: name <-> attribute code, compress and bounded decompress.

Codes are the ones Kafka stores in batch attributes: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- gzip: RFC 1952 members (several concatenated members are read).
- snappy: written with the xerial block framing Java clients use; read both framed and raw.
- lz4: Kafka's LZ4 frame (independent 64 KiB blocks, no content size). Magic 0 message sets
  carry a frame whose header checksum was computed wrongly by old brokers; ``legacy_lz4=True``
  accepts it, as Kafka does for magic 0.
- zstd: one or more concatenated frames.

Every function here may be called from several threads at once (zstandard's objects, which
are not thread-safe, are kept per thread).

Decompression never trusts a size written in the data: output grows only as it is produced and
stops at ``max_size`` (``MAX_DECOMPRESSED_SIZE`` by default) with ``DecompressionLimitError``
(a ``CorruptRecordError``). A ``DecompressionBudget`` extends that cap across many
decompressions: every batch of one record set (a Fetch response's records of a partition)
draws from the same budget, so many small bombs cannot add up either.
Large output buffers are taken from a small pool (``decompress_pooled``) because fresh
allocations of 1 MiB or more page-fault on every use.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable
from typing import Any

import cramjam
import lz4.frame
import zstandard

from ..errors import CorruptRecordError, DecompressionLimitError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_IDS: dict[str, int] = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
CODEC_NAMES: dict[int, str] = {v: k for k, v in CODEC_IDS.items()}

#: Largest decompressed size accepted, for one batch and for all batches of one record set
#: together (``DecompressionBudget``); more is treated as corrupt.
MAX_DECOMPRESSED_SIZE = 256 << 20

#: Most records the compressed legacy (magic 0/1) messages of one record set may hold together
#: (``DecompressionBudget``): they are decoded at once, one object each, so tiny records under
#: the size cap could still take gigabytes. More is treated as corrupt.
MAX_DECOMPRESSED_RECORDS = 1 << 18

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_POOL_MIN = 1 << 20


def codec_id(codec: str | int | None) -> int:
    """Kafka attribute code of a codec given by name (``"lz4"``), code (3) or None (none)."""
    if codec is None:
        return NONE
    if isinstance(codec, str):
        try:
            return CODEC_IDS[codec.lower()]
        except KeyError:
            raise ValueError(
                f"unknown compression codec {codec!r} (expected one of {', '.join(CODEC_IDS)})"
            ) from None
    if isinstance(codec, int) and not isinstance(codec, bool) and codec in CODEC_NAMES:
        return codec
    raise ValueError(f"unknown compression codec {codec!r}")


# ---------------------------------------------------------------------------------------------
# compress


def _gzip(data: Any, level: int | None) -> bytes:
    c = zlib.compressobj(6 if level is None or level < 0 else min(level, 9), zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def _snappy(data: Any, level: int | None) -> bytes:
    view = memoryview(data).cast("B")
    parts = [_XERIAL_HEADER]
    for i in range(0, len(view), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[i : i + _XERIAL_BLOCK]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4(data: Any, level: int | None) -> bytes:
    return lz4.frame.compress(
        data,
        compression_level=0 if level is None or level < 0 else level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )


#: zstandard compressor/decompressor objects must not be used by two threads at once: each
#: thread keeps its own (compressors by level in ``cctx``, one decompressor in ``dctx``).
_ZSTD_LOCAL = threading.local()


def _zstd(data: Any, level: int | None) -> bytes:
    lvl = 3 if level is None else level
    cache = getattr(_ZSTD_LOCAL, "cctx", None)
    if cache is None:
        cache = _ZSTD_LOCAL.cctx = {}
    cctx = cache.get(lvl)
    if cctx is None:
        cctx = cache[lvl] = zstandard.ZstdCompressor(level=lvl)
    return cctx.compress(data)


_COMPRESSORS: dict[int, Callable[[Any, int | None], bytes]] = {
    GZIP: _gzip,
    SNAPPY: _snappy,
    LZ4: _lz4,
    ZSTD: _zstd,
}


def compress(codec: str | int, data: Any, level: int | None = None) -> bytes:
    """Compress ``data`` (any bytes-like) with ``codec``; ``level`` None means the codec default."""
    cid = codec_id(codec)
    if cid == NONE:
        return bytes(data)
    return _COMPRESSORS[cid](data, level)


# ---------------------------------------------------------------------------------------------
# buffer pool


class _Pool:
    """A few reusable large bytearrays (taking and giving back is thread-safe)."""

    def __init__(self, keep: int = 4) -> None:
        self._free: list[bytearray] = []
        self._keep = keep
        self._lock = threading.Lock()

    def take(self, size: int) -> bytearray:
        with self._lock:
            for i, buf in enumerate(self._free):
                if len(buf) >= size:
                    return self._free.pop(i)
        return bytearray(max(size, _POOL_MIN))

    def give(self, buf: bytearray) -> None:
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(buf)
            else:
                smallest = min(range(len(self._free)), key=lambda i: len(self._free[i]))
                if len(self._free[smallest]) < len(buf):
                    self._free[smallest] = buf


_POOL = _Pool()


class Lease:
    """Decompressed bytes (``view``); ``release()`` returns a pooled buffer for reuse."""

    __slots__ = ("view", "_buf")

    def __init__(self, view: Any, buf: bytearray | None = None) -> None:
        self.view = view
        self._buf = buf

    def release(self) -> None:
        if self._buf is not None:
            buf, self._buf = self._buf, None
            self.view = b""
            _POOL.give(buf)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# ---------------------------------------------------------------------------------------------
# decompress


class DecompressionBudget:
    """Decompressed bytes, and records out of compressed legacy messages, still allowed across
    several decompressions (one record set).

    ``limit`` None means ``MAX_DECOMPRESSED_SIZE`` as it is when a decompression starts, and
    ``record_limit`` None ``MAX_DECOMPRESSED_RECORDS`` as it is when records are charged.
    Not thread-safe: one decode uses it at a time.
    """

    __slots__ = ("limit", "used", "record_limit", "records")

    def __init__(self, limit: int | None = None, record_limit: int | None = None) -> None:
        if limit is not None and limit < 0:
            raise ValueError(f"decompression budget must be >= 0, got {limit}")
        if record_limit is not None and record_limit < 0:
            raise ValueError(f"record budget must be >= 0, got {record_limit}")
        self.limit = limit
        self.used = 0
        self.record_limit = record_limit
        self.records = 0

    def total_records(self) -> int:
        """The record limit."""
        return MAX_DECOMPRESSED_RECORDS if self.record_limit is None else self.record_limit

    def records_left(self) -> int:
        """Records that compressed legacy messages may still expand to."""
        return max(self.total_records() - self.records, 0)

    def too_many_records(self, count: int) -> DecompressionLimitError:
        """The error for a compressed message of at least ``count`` records that does not
        fit."""
        return DecompressionLimitError(
            f"compressed message of {count}+ records: the record set's compressed legacy "
            f"messages are limited to {self.total_records()} records together "
            f"(kafka_fast.codecs.compression.MAX_DECOMPRESSED_RECORDS) and {self.records} are used")

    def total(self) -> int:
        """The limit in bytes."""
        return MAX_DECOMPRESSED_SIZE if self.limit is None else self.limit

    def remaining(self) -> int:
        """Bytes the next decompressions may still produce."""
        return max(self.total() - self.used, 0)

    def __repr__(self) -> str:
        return (f"DecompressionBudget(used={self.used}, limit={self.total()}, "
                f"records={self.records}, record_limit={self.total_records()})")


def _corrupt(codec: int, what: str) -> CorruptRecordError:
    return CorruptRecordError(f"{CODEC_NAMES[codec]} data {what}")


def _too_big(codec: int, max_size: int) -> DecompressionLimitError:
    return DecompressionLimitError(
        f"{CODEC_NAMES[codec]} data decompresses to more than {max_size} bytes")


#: Compressed bytes handed to zlib per call while reading a gzip member, doubling from
#: _GZIP_FIRST up to _GZIP_STEP: what zlib copies back as ``unused_data`` after a member ends
#: stays proportional to that member, so many tiny members cost linear time.
_GZIP_FIRST = 256
_GZIP_STEP = 1 << 20


def _gunzip(data: Any, max_size: int) -> Lease:
    view = memoryview(data).cast("B")
    end = len(view)
    if not end:
        raise _corrupt(GZIP, "is empty")
    parts = []
    total = pos = 0
    while pos < end:
        d = zlib.decompressobj(31)
        step = _GZIP_FIRST
        while True:
            piece = view[pos : pos + step]
            try:
                chunk = d.decompress(piece, max_size - total + 1)
            except zlib.error as exc:
                raise _corrupt(GZIP, f"is invalid ({exc})") from None
            total += len(chunk)
            if total > max_size or d.unconsumed_tail:
                raise _too_big(GZIP, max_size)
            if chunk:
                parts.append(chunk)
            if d.eof:
                pos += len(piece) - len(d.unused_data)
                break
            pos += len(piece)
            if pos >= end:
                raise _corrupt(GZIP, "is truncated")
            step = min(step * 2, _GZIP_STEP)
    return Lease(b"".join(parts))


def _raw_snappy_len(block: Any) -> int:
    n = shift = 0
    for i in range(min(5, len(block))):
        b = block[i]
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7
    raise _corrupt(SNAPPY, "has a bad length header")


def _unsnappy(data: Any, max_size: int) -> Lease:
    view = memoryview(data).cast("B")
    if len(view) >= 16 and view[:8] == _XERIAL_MAGIC:
        blocks = []
        pos, end = 16, len(view)
        while pos < end:
            if end - pos < 4:
                raise _corrupt(SNAPPY, "has a truncated xerial block header")
            (n,) = struct.unpack_from(">i", view, pos)
            pos += 4
            if n < 0 or n > end - pos:
                raise _corrupt(SNAPPY, f"has a xerial block length {n} beyond the data")
            blocks.append(view[pos : pos + n])
            pos += n
    else:
        blocks = [view]
    sizes = [_raw_snappy_len(b) for b in blocks]
    for b, n in zip(blocks, sizes, strict=True):
        # A snappy element of k bytes yields at most ~22k bytes: a larger header is forged.
        if n > 32 * len(b) + 64:
            raise _corrupt(SNAPPY, f"declares {n} bytes from a {len(b)}-byte block")
    total = sum(sizes)
    if total > max_size:
        raise _too_big(SNAPPY, max_size)
    buf = _POOL.take(total) if total >= _POOL_MIN else bytearray(total)
    out = memoryview(buf)
    pos = 0
    try:
        for b, n in zip(blocks, sizes, strict=True):
            cramjam.snappy.decompress_raw_into(b, out[pos : pos + n])
            pos += n
    except Exception as exc:
        out.release()
        if len(buf) >= _POOL_MIN:
            _POOL.give(buf)
        raise _corrupt(SNAPPY, f"is invalid ({exc})") from None
    return Lease(out[:total], buf if len(buf) >= _POOL_MIN else None)


def _xxh32_short(data: bytes) -> int:
    """xxHash32 (seed 0) of fewer than 16 bytes: enough for an LZ4 frame descriptor."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    h = (p5 + len(data)) & m
    i = 0
    while i + 4 <= len(data):
        (w,) = struct.unpack_from("<I", data, i)
        h = (rotl((h + w * p3) & m, 17) * p4) & m
        i += 4
    for b in data[i:]:
        h = (rotl((h + b * p5) & m, 11) * p1) & m
    h ^= h >> 15
    h = (h * p2) & m
    h ^= h >> 13
    h = (h * p3) & m
    h ^= h >> 16
    return h


def _fix_legacy_lz4_header(view: memoryview) -> bytes:
    """Rewrite the frame header checksum that magic 0 producers computed over the wrong bytes."""
    if len(view) < 7 or view[:4] != _LZ4_MAGIC:
        raise _corrupt(LZ4, "has no LZ4 frame magic")
    hc_pos = 6 + (8 if view[4] & 0x08 else 0) + (4 if view[4] & 0x01 else 0)
    if len(view) <= hc_pos:
        raise _corrupt(LZ4, "has a truncated frame header")
    fixed = bytearray(view)
    fixed[hc_pos] = (_xxh32_short(bytes(view[4:hc_pos])) >> 8) & 0xFF
    return bytes(fixed)


def _unlz4(data: Any, max_size: int, legacy: bool) -> Lease:
    view = memoryview(data).cast("B")
    if legacy:
        view = memoryview(_fix_legacy_lz4_header(view))
    if len(view) < 7 or view[:4] != _LZ4_MAGIC:
        raise _corrupt(LZ4, "has no LZ4 frame magic")
    cap = _POOL_MIN
    # LZ4 expands at most ~255x, so the true size is bounded by the input: grow up to that.
    bound = min(max_size, 255 * len(view) + 65536)
    if view[4] & 0x08 and len(view) >= 14:
        (declared,) = struct.unpack_from("<Q", view, 6)
        if declared > max_size:
            raise _too_big(LZ4, max_size)
        cap = max(min(declared, bound), 1)
    else:
        cap = min(max(cap, 4 * len(view)), bound)
    while True:
        buf = _POOL.take(cap) if cap >= _POOL_MIN else bytearray(cap)
        try:
            n = cramjam.lz4.decompress_into(view, buf)
        except Exception as exc:
            if len(buf) >= _POOL_MIN:
                _POOL.give(buf)
            text = str(exc)
            if "failed to write whole buffer" in text and len(buf) < bound:
                cap = min(len(buf) * 2, bound + 1)
                continue
            if "failed to write whole buffer" in text:
                raise _too_big(LZ4, max_size) from None
            raise _corrupt(LZ4, f"is invalid ({text})") from None
        if n > max_size:
            if len(buf) >= _POOL_MIN:
                _POOL.give(buf)
            raise _too_big(LZ4, max_size)
        return Lease(memoryview(buf)[:n], buf if len(buf) >= _POOL_MIN else None)


_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 * 1024


def _zstd_bound(view: memoryview) -> int:
    """Walk the frames (RFC 8878) to check they are complete; returns an upper bound of the
    decompressed size (raw and RLE block sizes, 128 KiB per compressed block)."""
    pos, end, bound = 0, len(view), 0
    if not end:
        raise _corrupt(ZSTD, "is empty")
    while pos < end:
        if end - pos < 4:
            raise _corrupt(ZSTD, "has a truncated frame magic")
        (magic,) = struct.unpack_from("<I", view, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            if end - pos < 8:
                raise _corrupt(ZSTD, "has a truncated skippable frame")
            (size,) = struct.unpack_from("<I", view, pos + 4)
            pos += 8 + size
            if pos > end:
                raise _corrupt(ZSTD, "has a truncated skippable frame")
            continue
        if magic != _ZSTD_MAGIC:
            raise _corrupt(ZSTD, "has no zstd frame magic")
        if end - pos < 5:
            raise _corrupt(ZSTD, "has a truncated frame header")
        fhd = view[pos + 4]
        if fhd & 0x08:
            raise _corrupt(ZSTD, "has a reserved frame header bit set")
        single = fhd & 0x20
        fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs
        while True:
            if end - pos < 3:
                raise _corrupt(ZSTD, "is truncated (block header)")
            head = view[pos] | view[pos + 1] << 8 | view[pos + 2] << 16
            kind, size = (head >> 1) & 3, head >> 3
            if kind == 3:
                raise _corrupt(ZSTD, "has a reserved block type")
            pos += 3 + (1 if kind == 1 else size)
            if pos > end:
                raise _corrupt(ZSTD, "is truncated (block data)")
            bound += size if kind < 2 else _ZSTD_BLOCK_MAX
            if head & 1:
                break
        pos += 4 if fhd & 0x04 else 0
        if pos > end:
            raise _corrupt(ZSTD, "is truncated (checksum)")
    return bound


def _unzstd(data: Any, max_size: int) -> Lease:
    dctx = getattr(_ZSTD_LOCAL, "dctx", None)
    if dctx is None:
        dctx = _ZSTD_LOCAL.dctx = zstandard.ZstdDecompressor()
    view = memoryview(data).cast("B")
    bound = _zstd_bound(view)
    cap = min(bound, max_size) + 1
    buf = _POOL.take(cap) if cap >= _POOL_MIN else bytearray(cap)
    n = 0
    try:
        with dctx.stream_reader(view, read_across_frames=True, read_size=1 << 20) as reader:
            with memoryview(buf) as out:
                while n < cap:
                    got = reader.readinto(out[n:cap])
                    if not got:
                        break
                    n += got
    except zstandard.ZstdError as exc:
        if len(buf) >= _POOL_MIN:
            _POOL.give(buf)
        raise _corrupt(ZSTD, f"is invalid ({exc})") from None
    if n > max_size:
        if len(buf) >= _POOL_MIN:
            _POOL.give(buf)
        raise _too_big(ZSTD, max_size)
    return Lease(memoryview(buf)[:n], buf if len(buf) >= _POOL_MIN else None)


_DECOMPRESSORS: dict[int, Callable[[Any, int, bool], Lease]] = {
    GZIP: lambda data, max_size, legacy: _gunzip(data, max_size),
    SNAPPY: lambda data, max_size, legacy: _unsnappy(data, max_size),
    LZ4: _unlz4,
    ZSTD: lambda data, max_size, legacy: _unzstd(data, max_size),
}


def decompress_pooled(
    codec: str | int,
    data: Any,
    *,
    max_size: int | None = None,
    legacy_lz4: bool = False,
    budget: DecompressionBudget | None = None,
) -> Lease:
    """Decompress into a (possibly pooled) buffer; use as ``with decompress_pooled(...) as l:``.

    ``l.view`` is valid until ``release()``. ``max_size`` defaults to ``MAX_DECOMPRESSED_SIZE``;
    with a ``budget`` the output is also bounded by what it has left, and is charged to it.
    Raises ``CorruptRecordError`` on bad data, ``DecompressionLimitError`` (one) above a limit.
    """
    cid = codec_id(codec)
    if cid == NONE:
        return Lease(memoryview(data).cast("B"))
    if max_size is None:
        max_size = MAX_DECOMPRESSED_SIZE
    limited_by = budget if budget is not None and budget.remaining() < max_size else None
    if limited_by is not None:
        max_size = limited_by.remaining()
    try:
        lease = _DECOMPRESSORS[cid](data, max_size, legacy_lz4)
    except DecompressionLimitError as exc:
        if limited_by is None:
            raise
        raise DecompressionLimitError(
            f"{exc.args[0].str()}: the record set's decompressed size is limited to "
            f"{limited_by.total()} bytes (kafka_fast.codecs.compression.MAX_DECOMPRESSED_SIZE) and "
            f"{limited_by.used} are used") from None
    if budget is not None:
        budget.used += len(lease.view)
    return lease


def decompress(
    codec: str | int,
    data: Any,
    *,
    max_size: int | None = None,
    legacy_lz4: bool = False,
) -> bytes:
    """Decompress ``data`` to bytes (bounded by ``max_size``); CorruptRecordError on bad data."""
    with decompress_pooled(codec, data, max_size=max_size, legacy_lz4=legacy_lz4) as lease:
        return bytes(lease.view)
