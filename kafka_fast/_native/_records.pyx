# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Kafka record batches (magic 2), compiled: bulk and incremental encoding, bounds-checked
decoding to record objects or packed columns. Conventions: see ``kafka_fast.records``.

Legacy message sets (magic 0/1) are decoded by the shared reader in ``kafka_fast.records.legacy``.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport (
    PyBytes_AS_STRING,
    PyBytes_CheckExact,
    PyBytes_FromStringAndSize,
    PyBytes_GET_SIZE,
)
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

cimport numpy as cnp

import numpy as np

from kafka_fast.codecs import compression as _codecs
from kafka_fast.records.buffers import byte_view, destination
from kafka_fast.records.columns import Columns, DeferredColumns
from kafka_fast.records.legacy import LegacyRecordBatch
from kafka_fast.errors import CorruptRecordError

cnp.import_array()

cdef extern from "Python.h":
    int PyObject_CheckBuffer(object o)
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    object PySequence_Fast(object o, const char *m)
    Py_ssize_t PySequence_Fast_GET_SIZE(object o)
    void *PySequence_Fast_GET_ITEM(object o, Py_ssize_t i)

cdef extern from *:
    """
    /* ptr/len of each item of a list of bytes/None, prefetching ahead (the objects are
     * scattered on the heap); returns the index of the first other item, or n. */
    static Py_ssize_t kf_collect_bytes(PyObject **items, Py_ssize_t start, Py_ssize_t n,
                                       const uint8_t **ptrs, int64_t *lens) {
        for (Py_ssize_t i = start; i < n; i++) {
            if (i + 8 < n) __builtin_prefetch(items[i + 8]);
            PyObject *o = items[i];
            if (PyBytes_CheckExact(o)) {
                ptrs[i] = (const uint8_t *)PyBytes_AS_STRING(o);
                lens[i] = PyBytes_GET_SIZE(o);
            } else if (o == Py_None) {
                ptrs[i] = NULL;
                lens[i] = -1;
            } else {
                return i;
            }
        }
        return n;
    }
    """
    ctypedef struct PyObject
    PyObject **PySequence_Fast_ITEMS(object o)
    Py_ssize_t kf_collect_bytes(PyObject **items, Py_ssize_t start, Py_ssize_t n,
                                const uint8_t **ptrs, int64_t *lens)

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk_id, timespec *tp)
    int CLOCK_REALTIME

cdef extern from "crc32c.h" nogil:
    uint32_t kf_crc32c(uint32_t crc, const void *buf, size_t len)

cdef extern from "kf_records.h" nogil:
    int KF_BATCH_HEADER, KF_CRC_START, KF_LOG_OVERHEAD, KF_MIN_RECORD
    int KF_OK, KF_E_TRUNCATED_VARINT, KF_E_TRAILING_BYTES
    int KF_COL_NULL, KF_COL_PTRS, KF_COL_ROWS, KF_COL_PACKED
    ctypedef struct kf_col:
        int kind
        const uint8_t *data
        int64_t width, stride
        const int64_t *offsets
        const uint8_t *nulls
        const uint8_t *const *ptrs
        const int64_t *lens
    ctypedef struct kf_hdrs:
        const uint8_t *data
        int64_t len
        const int64_t *offsets
    ctypedef struct kf_bulk:
        int64_t n
        const kf_col *keys
        const kf_col *values
        const int64_t *ts
        int64_t ts0
        int64_t first_ts
        const kf_hdrs *hdrs
        const int64_t *rows
    ctypedef struct kf_rec:
        int64_t ts_delta
        int32_t offset_delta
        int32_t klen, vlen
        const uint8_t *key
        const uint8_t *value
        int32_t header_count
        const uint8_t *headers
        const uint8_t *end
    ctypedef struct kf_columns:
        int64_t *offsets
        int64_t *timestamps
        int64_t *key_pos
        int64_t *value_pos
        int64_t *key_ends
        int64_t *value_ends
        uint8_t *key_nulls
        uint8_t *value_nulls
        int64_t key_bytes, value_bytes
        int has_headers

    uint64_t kf_load_be64(const uint8_t *p)
    uint32_t kf_load_be32(const uint8_t *p)
    uint16_t kf_load_be16(const uint8_t *p)
    void kf_store_be64(uint8_t *p, uint64_t v)
    void kf_store_be32(uint8_t *p, uint32_t v)
    void kf_store_be16(uint8_t *p, uint16_t v)
    uint64_t kf_zigzag(int64_t v)
    int64_t kf_unzigzag(uint64_t u)
    size_t kf_uvarint_size(uint64_t u)
    size_t kf_varint_size(int64_t v)
    uint8_t *kf_put_uvarint(uint8_t *p, uint64_t u)
    uint8_t *kf_put_varint(uint8_t *p, int64_t v)
    const uint8_t *kf_get_uvarint(const uint8_t *p, const uint8_t *end, int max_bytes, int bits,
                                  uint64_t *out, int *err)
    size_t kf_record_body_size(int64_t offset_delta, int64_t ts_delta, int64_t klen, int64_t vlen,
                               int64_t hlen)
    uint8_t *kf_write_record(uint8_t *p, size_t body, int64_t offset_delta, int64_t ts_delta,
                             const uint8_t *k, int64_t klen, const uint8_t *v, int64_t vlen,
                             const uint8_t *h, int64_t hlen)
    int64_t kf_bulk_size(const kf_bulk *b)
    int64_t kf_bulk_write(const kf_bulk *b, uint8_t *out)
    int64_t kf_max_ts(const int64_t *ts, int64_t n, int64_t ts0)
    void kf_write_batch_header(uint8_t *buf, int64_t total, int64_t base_offset,
                               int32_t partition_leader_epoch, int16_t attributes,
                               int32_t last_offset_delta, int64_t first_ts, int64_t max_ts,
                               int64_t producer_id, int16_t producer_epoch,
                               int32_t base_sequence, int32_t count)
    void kf_finish_crc(uint8_t *buf, int64_t total)
    int kf_parse_record(const uint8_t **pp, const uint8_t *end, kf_rec *r)
    int kf_parse_header(const uint8_t **pp, const uint8_t *end, const uint8_t **key,
                        int32_t *klen, const uint8_t **value, int32_t *vlen)
    int kf_columns_parse(const uint8_t *start, const uint8_t *end, int32_t count,
                         int64_t base_offset, int64_t first_ts, int log_append, int64_t max_ts,
                         kf_columns *c, const uint8_t **fault)
    void kf_columns_copy(const uint8_t *start, int32_t count, const kf_columns *c,
                         uint8_t *kdata, uint8_t *vdata)
    const char *kf_error_text(int code)

DEF HEADER_SIZE = 61
DEF INT32_MAX = 2147483647
DEF ATTR_LOG_APPEND_TIME = 0x08
DEF ATTR_TRANSACTIONAL = 0x10
DEF ATTR_CONTROL = 0x20
DEF MIN_LEGACY_LENGTH = 14
DEF MIN_V2_LENGTH = 49
DEF POOL_SLOTS = 8
DEF POOL_MIN = 65536

# timestamp types (kafka_fast.message)
DEF TS_CREATE = 1
DEF TS_LOG_APPEND = 2

cdef const uint8_t *_NO_HEADERS = b"\x00"


# A thread that releases the GIL waits up to one switch interval (sys.getswitchinterval(),
# 5 ms by default) to take it back while another thread runs Python code: the producer's I/O
# thread paid that after every batch it finished while the application produced. CRC32C runs
# at several GB/s, so checksums of less than this many bytes (well under a millisecond) are
# computed holding the GIL.
cdef Py_ssize_t CRC_NOGIL_MIN = 8 << 20


cdef inline void _finish_crc(uint8_t *p, Py_ssize_t total) noexcept:
    if total < CRC_NOGIL_MIN:
        kf_finish_crc(p, total)
    else:
        with nogil:
            kf_finish_crc(p, total)


cdef inline uint32_t _crc(const uint8_t *p, Py_ssize_t n) noexcept:
    cdef uint32_t crc
    if n < CRC_NOGIL_MIN:
        return kf_crc32c(0, p, <size_t>n)
    with nogil:
        crc = kf_crc32c(0, p, <size_t>n)
    return crc


cdef inline int64_t _now_ms() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_REALTIME, &t)
    return <int64_t>t.tv_sec * 1000 + t.tv_nsec // 1000000


def now_ms():
    """Current wall-clock time in milliseconds."""
    return _now_ms()


# ---------------------------------------------------------------------------------------------
# growable buffers and their pool (large buffers are reused: fresh ones page-fault)


cdef struct GrowBuf:
    uint8_t *p
    Py_ssize_t len
    Py_ssize_t cap

cdef uint8_t *_pool_ptr[POOL_SLOTS]
cdef Py_ssize_t _pool_cap[POOL_SLOTS]
cdef int _pool_n = 0


cdef int _buf_take(GrowBuf *b, Py_ssize_t want) except -1:
    """Give b a buffer of at least `want` bytes, from the pool when one fits."""
    global _pool_n
    cdef int i, best = -1
    for i in range(_pool_n):
        if _pool_cap[i] >= want and (best < 0 or _pool_cap[i] < _pool_cap[best]):
            best = i
    if best >= 0:
        b.p = _pool_ptr[best]
        b.cap = _pool_cap[best]
        _pool_n -= 1
        _pool_ptr[best] = _pool_ptr[_pool_n]
        _pool_cap[best] = _pool_cap[_pool_n]
    else:
        if want < 256:
            want = 256
        b.p = <uint8_t *>malloc(want)
        if b.p == NULL:
            raise MemoryError()
        b.cap = want
    b.len = 0
    return 0


cdef void _buf_give(GrowBuf *b) noexcept:
    """Return b's memory to the pool (or free it)."""
    global _pool_n
    cdef int i, smallest
    if b.p == NULL:
        return
    if b.cap >= POOL_MIN:
        if _pool_n < POOL_SLOTS:
            _pool_ptr[_pool_n] = b.p
            _pool_cap[_pool_n] = b.cap
            _pool_n += 1
            b.p = NULL
        else:
            smallest = 0
            for i in range(1, _pool_n):
                if _pool_cap[i] < _pool_cap[smallest]:
                    smallest = i
            if _pool_cap[smallest] < b.cap:
                free(_pool_ptr[smallest])
                _pool_ptr[smallest] = b.p
                _pool_cap[smallest] = b.cap
                b.p = NULL
    if b.p != NULL:
        free(b.p)
    b.p = NULL
    b.len = 0
    b.cap = 0


cdef inline int _buf_reserve(GrowBuf *b, Py_ssize_t extra) except -1:
    if b.len + extra <= b.cap:
        return 0
    cdef Py_ssize_t cap = b.cap * 2
    if cap < b.len + extra:
        cap = b.len + extra
    cdef uint8_t *p = <uint8_t *>realloc(b.p, cap)
    if p == NULL:
        raise MemoryError()
    b.p = p
    b.cap = cap
    return 0


cdef inline int _buf_put_varint(GrowBuf *b, int64_t v) except -1:
    _buf_reserve(b, 10)
    b.len = kf_put_varint(b.p + b.len, v) - b.p
    return 0


cdef inline int _buf_put(GrowBuf *b, const uint8_t *src, Py_ssize_t n) except -1:
    _buf_reserve(b, n)
    memcpy(b.p + b.len, src, n)
    b.len += n
    return 0


# ---------------------------------------------------------------------------------------------
# small helpers


cdef object _record_error(int code, Py_ssize_t position, bint decompressed, Py_ssize_t batch_pos):
    text = kf_error_text(code).decode("ascii")
    if decompressed:
        return CorruptRecordError(f"{text} in decompressed records (at byte {position} of them)",
                                  batch_pos)
    return CorruptRecordError(text, position)


cdef int _put_header_field(GrowBuf *b, object x, object key, str what) except -1:
    """Append a header key or value (length + bytes): str (utf-8) or a contiguous bytes-like
    object, sized by its buffer."""
    cdef Py_buffer view
    if PyBytes_CheckExact(x):
        _buf_put_varint(b, PyBytes_GET_SIZE(x))
        _buf_put(b, <const uint8_t *>PyBytes_AS_STRING(x), PyBytes_GET_SIZE(x))
        return 0
    if isinstance(x, str):
        xb = (<str>x).encode("utf-8")
        _buf_put_varint(b, PyBytes_GET_SIZE(xb))
        _buf_put(b, <const uint8_t *>PyBytes_AS_STRING(xb), PyBytes_GET_SIZE(xb))
        return 0
    cdef bint held = False
    if not isinstance(x, (int, float, np.generic)) and PyObject_CheckBuffer(x):
        try:
            PyObject_GetBuffer(x, &view, PyBUF_SIMPLE)
            held = True
        except (BufferError, ValueError, TypeError):
            pass
    if held:
        try:
            if view.len > INT32_MAX:
                raise ValueError(f"header {key!r}: {what} is longer than 2 GiB")
            _buf_put_varint(b, view.len)
            _buf_put(b, <const uint8_t *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        return 0
    raise TypeError(f"header {key!r}: {what} must be bytes-like, str or None, "
                    f"not {type(x).__name__}")


cdef int _put_headers(GrowBuf *b, object headers) except -1:
    """Append the encoded header list (count + entries) of a dict or a list of (key, value)
    tuples."""
    cdef Py_ssize_t i, n
    if isinstance(headers, dict):
        headers = list((<dict>headers).items())
    seq = PySequence_Fast(headers, "headers must be a dict or a list of (key, value) tuples")
    n = PySequence_Fast_GET_SIZE(seq)
    _buf_put_varint(b, n)
    for i in range(n):
        item = <object>PySequence_Fast_GET_ITEM(seq, i)
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"a header must be a (key, value) tuple, got {item!r}")
        k, v = item
        _put_header_field(b, k, k, "key")
        if v is None:
            _buf_put_varint(b, -1)
        else:
            _put_header_field(b, v, k, "value")
    return 0


cdef list _headers_list(const uint8_t *p, const uint8_t *end, int32_t count):
    """Headers of an already validated record."""
    cdef const uint8_t *k
    cdef const uint8_t *v
    cdef int32_t kl, vl, i
    out = PyList_New(count)
    for i in range(count):
        kf_parse_header(&p, end, &k, &kl, &v, &vl)
        key = PyUnicode_DecodeUTF8(<const char *>k, kl, "replace")
        val = None if vl < 0 else PyBytes_FromStringAndSize(<const char *>v, vl)
        item = (key, val)
        Py_INCREF(item)
        PyList_SET_ITEM(out, i, item)
    return out


cdef inline int64_t _i64(object v, str what) except? -1:
    try:
        return v
    except OverflowError:
        raise OverflowError(f"{what} {v} does not fit in int64") from None


cdef int64_t _i64_in(object v, str what, int64_t lo, int64_t hi) except? -1:
    cdef int64_t x = _i64(v, what)
    if x < lo or x > hi:
        raise OverflowError(f"{what} {v} is out of range {lo}..{hi}")
    return x


# ---------------------------------------------------------------------------------------------
# bulk encoding


cdef class _Column:
    """A values/keys argument of encode_batch as a kf_col (keeps the buffers it points into)."""

    cdef kf_col col
    cdef Py_ssize_t n
    cdef Py_ssize_t size  # packed: bytes of data
    cdef str what
    cdef object keep
    cdef const uint8_t **ptrs
    cdef int64_t *lens

    def __dealloc__(self):
        free(self.ptrs)
        free(self.lens)

    cdef int setup(self, object obj, str what) except -1:
        cdef cnp.ndarray arr, offs
        cdef Py_ssize_t i, n, size
        cdef const int64_t *o
        cdef Py_buffer view
        if obj is None:
            self.col.kind = KF_COL_NULL
            self.n = -1
            return 0
        if (isinstance(obj, tuple) and len(obj) in (2, 3)
                and isinstance(obj[1], np.ndarray) and obj[1].ndim == 1):
            data = byte_view(obj[0], f"{what}: packed data")
            offs = obj[1]
            if offs.dtype != np.int64:
                raise TypeError(f"{what}: packed offsets must be an int64 array")
            offs = np.ascontiguousarray(offs)
            n = offs.shape[0] - 1
            if n < 0:
                raise ValueError(f"{what}: packed offsets need N+1 entries")
            nulls = None
            if len(obj) == 3 and obj[2] is not None:
                nulls = np.ascontiguousarray(obj[2], dtype=np.bool_).view(np.uint8)
                if nulls.ndim != 1 or nulls.shape[0] != n:
                    raise ValueError(
                        f"{what}: null mask has {nulls.shape[0]} entries for {n} records")
                self.col.nulls = <const uint8_t *>cnp.PyArray_DATA(nulls)
            self.size = len(data)
            self.what = what
            o = <const int64_t *>cnp.PyArray_DATA(offs)
            self.keep = (data, offs, nulls)
            self.col.kind = KF_COL_PACKED
            self.col.offsets = o
            PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
            self.col.data = <const uint8_t *>view.buf
            PyBuffer_Release(&view)  # `data` (kept) holds the export
            self.n = n
            return 0
        if isinstance(obj, np.ndarray):
            if obj.ndim != 2 or obj.dtype != np.uint8:
                raise TypeError(f"{what}: a numpy array must be 2-D uint8 (one row per record)")
            arr = np.ascontiguousarray(obj)
            self.keep = arr
            self.col.kind = KF_COL_ROWS
            self.col.data = <const uint8_t *>cnp.PyArray_DATA(arr)
            self.col.width = arr.shape[1]
            self.col.stride = arr.shape[1]
            self.n = arr.shape[0]
            return 0
        if isinstance(obj, (bytes, bytearray, memoryview, str)):
            raise TypeError(
                f"{what} must be a sequence of records, not a single {type(obj).__name__}")
        seq = PySequence_Fast(obj, "values/keys must be a sequence")
        n = PySequence_Fast_GET_SIZE(seq)
        self.ptrs = <const uint8_t **>malloc(max(n, 1) * sizeof(uint8_t *))
        self.lens = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
        if self.ptrs == NULL or self.lens == NULL:
            raise MemoryError()
        views = None
        i = kf_collect_bytes(PySequence_Fast_ITEMS(seq), 0, n, self.ptrs, self.lens)
        while i < n:
            item = <object>PySequence_Fast_GET_ITEM(seq, i)
            if isinstance(item, str):
                raise TypeError(f"{what}[{i}] is a str; encode it to bytes first")
            else:
                mv = memoryview(item)
                if not mv.c_contiguous:
                    raise ValueError(f"{what}[{i}] is not a contiguous buffer")
                if views is None:
                    views = []
                views.append(mv)
                PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
                self.ptrs[i] = <const uint8_t *>view.buf
                self.lens[i] = view.len
                PyBuffer_Release(&view)
            i = kf_collect_bytes(PySequence_Fast_ITEMS(seq), i + 1, n, self.ptrs, self.lens)
        self.keep = (seq, views)
        self.col.kind = KF_COL_PTRS
        self.col.ptrs = self.ptrs
        self.col.lens = self.lens
        self.n = n
        return 0


    cdef int check_rows(self, const int64_t *rows, Py_ssize_t n) except -1:
        """Packed columns: the offsets of the records that will be encoded (all ``n`` when
        ``rows`` is NULL, else those rows, already known to be in range) lie in the data."""
        cdef const int64_t *o = self.col.offsets
        cdef Py_ssize_t i, r
        if self.col.kind != KF_COL_PACKED:
            return 0
        for i in range(n):
            r = i if rows == NULL else rows[i]
            if not (0 <= o[r] <= o[r + 1] <= self.size):
                raise ValueError(f"{self.what}: packed offsets[{r}:{r + 2}] = "
                                 f"({o[r]}, {o[r + 1]}) outside 0..{self.size}")
        return 0


cdef class _Headers:
    """The headers argument of encode_batch as pre-encoded blobs."""

    cdef kf_hdrs h
    cdef GrowBuf buf
    cdef object offsets

    def __dealloc__(self):
        free(self.buf.p)

    cdef int setup(self, object headers, Py_ssize_t n) except -1:
        cdef Py_ssize_t i
        cdef int64_t[::1] offs
        self.buf.p = <uint8_t *>malloc(256)
        if self.buf.p == NULL:
            raise MemoryError()
        self.buf.cap = 256
        self.buf.len = 0
        if headers is None or len(headers) == 0:
            self.buf.p[0] = 0
            self.buf.len = 1
        elif isinstance(headers, dict) or isinstance(headers[0], tuple):
            _put_headers(&self.buf, headers)
        else:
            if len(headers) != n:
                raise ValueError(f"headers has {len(headers)} per-record lists for {n} records")
            self.offsets = np.empty(n + 1, dtype=np.int64)
            offs = self.offsets
            offs[0] = 0
            for i in range(n):
                h = headers[i]
                if h is None or len(h) == 0:
                    _buf_put(&self.buf, _NO_HEADERS, 1)
                else:
                    _put_headers(&self.buf, h)
                offs[i + 1] = self.buf.len
            self.h.offsets = &offs[0]
        self.h.data = self.buf.p
        self.h.len = self.buf.len
        return 0


cdef object _destination(object into, Py_ssize_t total, uint8_t **p):
    """Where a batch of ``total`` bytes is written: a new bytes object, or with ``into`` the
    first ``total`` bytes of the writable buffer ``into(total)`` returns (a memoryview of
    exactly those bytes). ``p`` gets the address to write at."""
    cdef Py_buffer view
    if into is None:
        out = PyBytes_FromStringAndSize(NULL, total)
        p[0] = <uint8_t *>PyBytes_AS_STRING(out)
        return out
    out = destination(into, total)
    PyObject_GetBuffer(out, &view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    p[0] = <uint8_t *>view.buf
    PyBuffer_Release(&view)  # `out` keeps the export alive
    return out


cdef object _finish_batch(const uint8_t *records, Py_ssize_t size, int codec, object level,
                         int64_t base_offset, int32_t partition_leader_epoch, bint transactional,
                         int32_t count, int64_t first_ts, int64_t max_ts, int64_t producer_id,
                         int16_t producer_epoch, int32_t base_sequence, object into=None):
    """Compress `size` bytes of encoded records and wrap them in a batch header (written
    where ``_destination`` says)."""
    mv = PyMemoryView_FromMemory(<char *>records, size, PyBUF_READ)
    try:
        payload = _codecs.compress(codec, mv, level)
    finally:
        mv.release()
    if not PyBytes_CheckExact(payload):
        payload = bytes(memoryview(payload).cast("B"))
    cdef Py_ssize_t total = HEADER_SIZE + PyBytes_GET_SIZE(payload)
    if total > INT32_MAX:
        raise ValueError(f"record batch of {total} bytes exceeds the format's limit")
    cdef uint8_t *p = NULL
    out = _destination(into, total, &p)
    memcpy(p + HEADER_SIZE, PyBytes_AS_STRING(payload), total - HEADER_SIZE)
    kf_write_batch_header(p, total, base_offset, partition_leader_epoch,
                          <int16_t>(codec | (ATTR_TRANSACTIONAL if transactional else 0)),
                          count - 1, first_ts, max_ts, producer_id, producer_epoch,
                          base_sequence, count)
    _finish_crc(p, total)
    return out


cdef inline int64_t _max_ts(const kf_bulk *b) noexcept nogil:
    """The largest timestamp of a bulk encode's records (of its picked rows, if any)."""
    cdef int64_t m, i
    if b.rows == NULL or b.ts == NULL:
        return kf_max_ts(b.ts, b.n, b.ts0)
    m = b.ts[b.rows[0]]
    for i in range(1, b.n):
        if b.ts[b.rows[i]] > m:
            m = b.ts[b.rows[i]]
    return m


def encode_batch(values, keys=None, *, timestamps=None, headers=None, compression="none",
                 compression_level=None, base_offset=0, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1, transactional=False, partition_leader_epoch=-1, rows=None,
                 into=None):
    """Encode one complete RecordBatch (magic 2) holding every given record, or with
    ``rows`` (integer indices) the records at those rows of the columns, timestamps and
    per-record headers, in that order. With ``into`` (a callable taking the batch's size and
    returning a writable buffer at least that large) the batch is written into that buffer and
    a memoryview of exactly its bytes is returned instead of a new bytes object."""
    cdef int codec = _codecs.codec_id(compression)
    cdef cnp.ndarray rows_arr
    cdef const int64_t *rp
    cdef Py_ssize_t i, nrows = -1, source_n
    cdef _Column vcol = _Column()
    cdef _Column kcol = _Column()
    cdef _Headers hdrs = _Headers()
    cdef kf_bulk b
    cdef cnp.ndarray ts_arr
    cdef int64_t size, total, max_ts
    cdef int64_t c_base = _i64(base_offset, "base_offset")
    cdef int64_t c_pid = _i64(producer_id, "producer_id")
    cdef int16_t c_epoch = _i64_in(producer_epoch, "producer_epoch", -32768, 32767)
    cdef int32_t c_seq = _i64_in(base_sequence, "base_sequence", -2147483648, INT32_MAX)
    cdef int32_t c_ple = _i64_in(partition_leader_epoch, "partition_leader_epoch",
                                 -2147483648, INT32_MAX)
    cdef bint c_txn = bool(transactional)
    cdef GrowBuf scratch
    cdef bint nogil_ok
    cdef Py_ssize_t n
    cdef uint8_t *p
    if values is None:
        raise TypeError("values must be given (use a list with None for null values)")
    vcol.setup(values, "values")
    kcol.setup(keys, "keys")
    source_n = n = vcol.n
    if kcol.n >= 0 and kcol.n != n:
        raise ValueError(f"keys has {kcol.n} entries for {n} values")
    b.rows = NULL
    if rows is not None:
        rows_arr = np.ascontiguousarray(rows, dtype=np.int64)
        if rows_arr.ndim != 1:
            raise ValueError("rows must be a 1-D sequence of record indices")
        nrows = n = rows_arr.shape[0]
        rp = <const int64_t *>cnp.PyArray_DATA(rows_arr)
        for i in range(nrows):
            if rp[i] < 0 or rp[i] >= source_n:
                raise IndexError(f"rows[{i}] = {rp[i]} is outside the {source_n} records")
        b.rows = rp
    vcol.check_rows(b.rows, n)
    kcol.check_rows(b.rows, n)
    if n == 0:
        raise ValueError("a record batch needs at least one record")
    if n > INT32_MAX:
        raise ValueError("too many records for one batch")
    b.n = n
    b.values = &vcol.col
    b.keys = &kcol.col
    b.ts = NULL
    if timestamps is None:
        b.ts0 = _now_ms()
    elif isinstance(timestamps, (int, np.integer)) and not isinstance(timestamps, bool):
        b.ts0 = _i64(timestamps, "timestamp")
    else:
        ts_arr = np.ascontiguousarray(timestamps, dtype=np.int64)
        if ts_arr.ndim != 1 or ts_arr.shape[0] != source_n:
            raise ValueError(f"timestamps has {ts_arr.size} entries for {source_n} records")
        b.ts = <const int64_t *>cnp.PyArray_DATA(ts_arr)
    hdrs.setup(headers, source_n)
    b.hdrs = &hdrs.h
    b.first_ts = b.ts0 if b.ts == NULL else b.ts[0] if b.rows == NULL else b.ts[b.rows[0]]
    nogil_ok = vcol.col.kind != KF_COL_PTRS and kcol.col.kind != KF_COL_PTRS
    if nogil_ok:
        with nogil:
            size = kf_bulk_size(&b)
            max_ts = _max_ts(&b)
    else:
        size = kf_bulk_size(&b)
        max_ts = _max_ts(&b)
    if size < 0:
        raise ValueError("a key or value is longer than 2 GiB")
    total = HEADER_SIZE + size
    if codec == 0:
        if total > INT32_MAX:
            raise ValueError(f"record batch of {total} bytes exceeds the format's limit")
        out = _destination(into, total, &p)
        kf_write_batch_header(p, total, c_base, c_ple, <int16_t>(ATTR_TRANSACTIONAL if c_txn else 0),
                              <int32_t>(n - 1), b.first_ts, max_ts, c_pid, c_epoch, c_seq,
                              <int32_t>n)
        if nogil_ok:
            with nogil:
                kf_bulk_write(&b, p + HEADER_SIZE)
                kf_finish_crc(p, total)
        else:
            kf_bulk_write(&b, p + HEADER_SIZE)
            _finish_crc(p, total)
        return out
    scratch.p = NULL
    _buf_take(&scratch, size)
    try:
        if nogil_ok:
            with nogil:
                kf_bulk_write(&b, scratch.p)
        else:
            kf_bulk_write(&b, scratch.p)
        return _finish_batch(scratch.p, size, codec, compression_level, c_base, c_ple, c_txn,
                             <int32_t>n, b.first_ts, max_ts, c_pid, c_epoch, c_seq, into)
    finally:
        _buf_give(&scratch)


# ---------------------------------------------------------------------------------------------
# incremental builder


@cython.final
@cython.binding(False)  # methods check their self (Cls.method(None) raises TypeError)
cdef class RecordBatchBuilder:
    """Builds one RecordBatch record by record; ``append`` returns False once it is full."""

    cdef GrowBuf buf
    cdef GrowBuf hdr
    cdef int codec
    cdef object level
    cdef Py_ssize_t batch_size
    cdef int64_t base_offset, producer_id, first_ts, max_ts
    cdef int32_t partition_leader_epoch, base_sequence, count
    cdef int16_t producer_epoch
    cdef bint transactional
    cdef object built

    def __cinit__(self):
        self.buf.p = NULL
        self.hdr.p = NULL

    def __init__(self, compression="none", batch_size=1_048_576, compression_level=None,
                 base_offset=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 transactional=False, partition_leader_epoch=-1):
        self.codec = _codecs.codec_id(compression)
        self.level = compression_level
        self.batch_size = batch_size
        self.base_offset = _i64(base_offset, "base_offset")
        self.partition_leader_epoch = _i64_in(partition_leader_epoch, "partition_leader_epoch",
                                              -2147483648, INT32_MAX)
        self.set_producer_state(producer_id, producer_epoch, base_sequence, transactional)
        _buf_give(&self.buf)
        _buf_take(&self.buf, min(max(batch_size, 4096) + 1024, POOL_MIN))
        self.buf.len = HEADER_SIZE
        self.count = 0
        self.max_ts = -1
        self.first_ts = 0
        self.built = None

    def __dealloc__(self):
        _buf_give(&self.buf)
        free(self.hdr.p)

    def set_producer_state(self, producer_id, producer_epoch, base_sequence, transactional=False):
        """Producer id, epoch, first sequence and transactional flag written by ``build``."""
        self.producer_id = _i64(producer_id, "producer_id")
        self.producer_epoch = _i64_in(producer_epoch, "producer_epoch", -32768, 32767)
        self.base_sequence = _i64_in(base_sequence, "base_sequence", -2147483648, INT32_MAX)
        self.transactional = bool(transactional)

    def append(self, value, key=None, timestamp=None, headers=None):
        """Add a record; False (and nothing added) if it would overflow ``batch_size``."""
        cdef Py_buffer vview, kview
        cdef const uint8_t *v = NULL
        cdef const uint8_t *k = NULL
        cdef const uint8_t *h = _NO_HEADERS
        cdef Py_ssize_t vlen = -1, klen = -1, hlen = 1, rec
        cdef bint vheld = False, kheld = False
        cdef int64_t ts, tsd
        cdef size_t body
        if self.built is not None:
            raise RuntimeError("the batch was already built")
        if self.buf.p == NULL:
            raise RuntimeError("RecordBatchBuilder.__init__ was not called")
        if timestamp is None:
            ts = _now_ms()
        else:
            ts = _i64(timestamp, "timestamp")
        if headers is not None and len(headers):
            self.hdr.len = 0
            if self.hdr.p == NULL:
                _buf_take(&self.hdr, 256)
            _put_headers(&self.hdr, headers)
            h = self.hdr.p
            hlen = self.hdr.len
        try:
            if PyBytes_CheckExact(value):
                v = <const uint8_t *>PyBytes_AS_STRING(value)
                vlen = PyBytes_GET_SIZE(value)
            elif value is not None:
                if isinstance(value, str):
                    raise TypeError("value is a str; encode it to bytes first")
                PyObject_GetBuffer(value, &vview, PyBUF_SIMPLE)
                vheld = True
                v = <const uint8_t *>vview.buf
                vlen = vview.len
            if PyBytes_CheckExact(key):
                k = <const uint8_t *>PyBytes_AS_STRING(key)
                klen = PyBytes_GET_SIZE(key)
            elif key is not None:
                if isinstance(key, str):
                    raise TypeError("key is a str; encode it to bytes first")
                PyObject_GetBuffer(key, &kview, PyBUF_SIMPLE)
                kheld = True
                k = <const uint8_t *>kview.buf
                klen = kview.len
            if vlen > INT32_MAX or klen > INT32_MAX:
                raise ValueError("a key or value is longer than 2 GiB")
            if self.count == 0:
                self.first_ts = ts
            tsd = <int64_t>(<uint64_t>ts - <uint64_t>self.first_ts)
            body = kf_record_body_size(self.count, tsd, klen, vlen, hlen)
            rec = kf_uvarint_size(kf_zigzag(body)) + body
            if self.count > 0 and self.buf.len + rec > self.batch_size:
                return False
            if self.count == INT32_MAX:
                return False
            _buf_reserve(&self.buf, rec)
            self.buf.len = kf_write_record(self.buf.p + self.buf.len, body, self.count, tsd,
                                           k, klen, v, vlen, h, hlen) - self.buf.p
        finally:
            if vheld:
                PyBuffer_Release(&vview)
            if kheld:
                PyBuffer_Release(&kview)
        self.count += 1
        if ts > self.max_ts or self.count == 1:
            self.max_ts = ts
        return True

    def __len__(self):
        return self.count

    @property
    def size_in_bytes(self):
        """Bytes the batch holds so far, uncompressed, header included."""
        if self.built is not None:
            return len(self.built)
        return self.buf.len

    def build(self):
        """The finished batch (the builder accepts no more records afterwards)."""
        cdef Py_ssize_t total
        if self.built is not None:
            return self.built
        if self.count == 0:
            raise ValueError("a record batch needs at least one record")
        if self.codec == 0:
            total = self.buf.len
            if total > INT32_MAX:
                raise ValueError(f"record batch of {total} bytes exceeds the format's limit")
            kf_write_batch_header(
                self.buf.p, total, self.base_offset, self.partition_leader_epoch,
                <int16_t>(ATTR_TRANSACTIONAL if self.transactional else 0), self.count - 1,
                self.first_ts, self.max_ts, self.producer_id, self.producer_epoch,
                self.base_sequence, self.count)
            _finish_crc(self.buf.p, total)
            out = PyBytes_FromStringAndSize(<char *>self.buf.p, total)
        else:
            out = _finish_batch(self.buf.p + HEADER_SIZE, self.buf.len - HEADER_SIZE, self.codec,
                                self.level, self.base_offset, self.partition_leader_epoch,
                                self.transactional, self.count, self.first_ts, self.max_ts,
                                self.producer_id, self.producer_epoch, self.base_sequence)
        self.built = out
        _buf_give(&self.buf)
        free(self.hdr.p)
        self.hdr.p = NULL
        return out


def patch_producer_fields(buf, producer_id, producer_epoch, base_sequence, transactional=None,
                          in_place=False):
    """A copy of one built batch with new producer id/epoch/base sequence (and optionally the
    transactional flag), its CRC recomputed; with ``in_place`` the writable buffer ``buf``
    itself is patched (after every check passed) and returned."""
    cdef Py_buffer view
    cdef uint16_t attrs
    cdef uint8_t *p
    cdef Py_ssize_t n
    cdef int64_t c_pid = _i64(producer_id, "producer_id")
    cdef int16_t c_epoch = _i64_in(producer_epoch, "producer_epoch", -32768, 32767)
    cdef int32_t c_seq = _i64_in(base_sequence, "base_sequence", -2147483648, INT32_MAX)
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        n = view.len  # the buffer's size: len(buf) may be anything
        if in_place:
            if view.readonly:
                raise TypeError("patch_producer_fields(in_place=True) needs a writable buffer")
            out = buf
            p = <uint8_t *>view.buf
        else:
            out = PyBytes_FromStringAndSize(NULL, n)
            p = <uint8_t *>PyBytes_AS_STRING(out)
            memcpy(p, view.buf, n)
    finally:
        PyBuffer_Release(&view)  # in place: the caller's reference keeps ``buf`` alive
    if n < HEADER_SIZE or p[16] != 2:
        raise ValueError("not a magic 2 record batch")
    if <int32_t>kf_load_be32(p + 8) + KF_LOG_OVERHEAD != n:
        raise ValueError(f"batch length field {<int32_t>kf_load_be32(p + 8)} does not match "
                         f"{n} bytes")
    kf_store_be64(p + 43, <uint64_t>c_pid)
    kf_store_be16(p + 51, <uint16_t>c_epoch)
    kf_store_be32(p + 53, <uint32_t>c_seq)
    if transactional is not None:
        attrs = kf_load_be16(p + 21)
        attrs = (attrs | ATTR_TRANSACTIONAL) if transactional else (attrs & ~ATTR_TRANSACTIONAL)
        kf_store_be16(p + 21, attrs)
    kf_finish_crc(p, n)
    return out


# ---------------------------------------------------------------------------------------------
# decoding


@cython.freelist(256)
@cython.final
@cython.no_gc
cdef class Record:
    """One decoded record: ``offset, timestamp, key, value, headers``.

    Not tracked by the garbage collector (decoding creates many; they hold only bytes and
    the header list), so do not store a record inside its own headers.
    """

    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly object value
    cdef object _headers  # None when the record has no headers

    def __init__(self, offset, timestamp, key, value, headers):
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self._headers = headers if headers else None

    @property
    def headers(self):
        """List of ``(str, bytes | None)`` tuples (empty when the record has none)."""
        return [] if self._headers is None else self._headers

    def __eq__(self, other):
        try:
            return (self.offset, self.timestamp, self.key, self.value, self.headers) == (
                other.offset, other.timestamp, other.key, other.value, other.headers)
        except AttributeError:
            return NotImplemented

    __hash__ = None

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


cdef class _Region:
    """The record bytes of a batch: the input itself, or a decompressed (pooled) copy."""

    cdef Py_buffer view
    cdef bint held
    cdef object lease
    cdef const uint8_t *start
    cdef const uint8_t *end
    cdef bint decompressed

    def __dealloc__(self):
        self.close()

    cdef close(self):
        if self.held:
            PyBuffer_Release(&self.view)
            self.held = False
        if self.lease is not None:
            lease, self.lease = self.lease, None
            lease.release()


@cython.final
@cython.binding(False)
cdef class RecordBatch:
    """A decoded RecordBatch (magic 2) header; records are parsed on ``records()``/``columns()``."""

    cdef readonly int64_t base_offset
    cdef readonly int32_t last_offset_delta
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int magic
    cdef readonly int compression
    cdef readonly int timestamp_type
    cdef readonly int attributes
    cdef readonly bint is_transactional
    cdef readonly bint is_control
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int64_t first_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t next_offset
    cdef readonly Py_ssize_t byte_size
    cdef readonly uint32_t crc
    cdef int32_t count
    cdef object mv          # memoryview over the whole input (keeps it alive)
    cdef object budget      # the DecompressionBudget shared by the batches of one decode
    cdef const uint8_t *base  # start of the input
    cdef Py_ssize_t pos       # batch start in the input

    def __init__(self):
        raise TypeError("RecordBatch objects come from decode_batches()")

    def __len__(self):
        """Number of records the batch declares."""
        return self.count

    def __repr__(self):
        return (f"RecordBatch(base_offset={self.base_offset}, records={self.count}, "
                f"compression={_codecs.CODEC_NAMES[self.compression]}, bytes={self.byte_size})")

    cdef _Region _region(self):
        cdef _Region r = _Region()
        cdef const uint8_t *p = self.base + self.pos
        cdef Py_ssize_t n
        if self.compression == 0:
            r.start = p + HEADER_SIZE
            r.end = p + self.byte_size
        else:
            payload = self.mv[self.pos + HEADER_SIZE:self.pos + self.byte_size]
            try:
                # charged once: decoding the same batch again costs the record set nothing
                r.lease = _codecs.decompress_pooled(self.compression, payload,
                                                    budget=self.budget)
                self.budget = None
            except CorruptRecordError as exc:
                raise type(exc)(exc.args[0].str(), self.pos) from None
            PyObject_GetBuffer(r.lease.view, &r.view, PyBUF_SIMPLE)
            r.held = True
            r.start = <const uint8_t *>r.view.buf
            r.end = r.start + r.view.len
            r.decompressed = True
        n = r.end - r.start
        if <int64_t>self.count * KF_MIN_RECORD > n:
            r.close()
            raise CorruptRecordError(
                f"record count {self.count} cannot fit in {n} bytes of records", self.pos + 57)
        return r

    cdef object _error(self, int code, const uint8_t *at, _Region r):
        if r.decompressed:
            return _record_error(code, at - r.start, True, self.pos)
        return _record_error(code, at - self.base, False, self.pos)

    def records(self):
        """Every record as a ``Record`` object."""
        cdef _Region r = self._region()
        cdef const uint8_t *p = r.start
        cdef kf_rec rec
        cdef int32_t i
        cdef int e
        cdef Record obj
        cdef bint log_append = self.timestamp_type == TS_LOG_APPEND
        cdef uint64_t base = <uint64_t>self.base_offset
        cdef uint64_t first = <uint64_t>self.first_timestamp
        cdef list out
        try:
            out = PyList_New(self.count)
            for i in range(self.count):
                e = kf_parse_record(&p, r.end, &rec)
                if e != KF_OK:
                    raise self._error(e, p, r)
                obj = Record.__new__(Record)
                obj.offset = <int64_t>(base + <uint64_t><int64_t>rec.offset_delta)
                obj.timestamp = self.max_timestamp if log_append else <int64_t>(
                    first + <uint64_t>rec.ts_delta)
                obj.key = None if rec.klen < 0 else PyBytes_FromStringAndSize(
                    <const char *>rec.key, rec.klen)
                obj.value = None if rec.vlen < 0 else PyBytes_FromStringAndSize(
                    <const char *>rec.value, rec.vlen)
                if rec.header_count:
                    obj._headers = _headers_list(rec.headers, rec.end, rec.header_count)
                Py_INCREF(obj)
                PyList_SET_ITEM(out, i, obj)
            if p != r.end:
                raise self._error(KF_E_TRAILING_BYTES, p, r)
            return out
        finally:
            r.close()

    def columns(self, defer=False):
        """Every record as packed columns (``Columns``). With ``defer``, an uncompressed
        batch's key and value bytes stay where they are (``DeferredColumns``) until they are
        asked for or copied straight into a larger column (``copy_fields``)."""
        cdef bint deferred = bool(defer) and self.compression == 0
        cdef cnp.ndarray key_pos, value_pos
        cdef _Region r = self._region()
        cdef kf_columns c
        cdef Py_ssize_t n = self.count
        cdef const uint8_t *fault = NULL
        cdef int e
        cdef int log_append = self.timestamp_type == TS_LOG_APPEND
        cdef cnp.ndarray offsets, timestamps, key_ends, value_ends, key_nulls, value_nulls
        cdef cnp.ndarray kdata, vdata
        try:
            offsets = np.empty(n, dtype=np.int64)
            timestamps = np.empty(n, dtype=np.int64)
            key_ends = np.empty(n + 1, dtype=np.int64)
            value_ends = np.empty(n + 1, dtype=np.int64)
            key_nulls = np.empty(n, dtype=np.bool_)
            value_nulls = np.empty(n, dtype=np.bool_)
            c.offsets = <int64_t *>cnp.PyArray_DATA(offsets)
            c.timestamps = <int64_t *>cnp.PyArray_DATA(timestamps)
            c.key_ends = <int64_t *>cnp.PyArray_DATA(key_ends)
            c.value_ends = <int64_t *>cnp.PyArray_DATA(value_ends)
            c.key_nulls = <uint8_t *>cnp.PyArray_DATA(key_nulls)
            c.value_nulls = <uint8_t *>cnp.PyArray_DATA(value_nulls)
            if deferred:
                key_pos = np.empty(max(n, 1), dtype=np.int64)
                value_pos = np.empty(max(n, 1), dtype=np.int64)
                c.key_pos = <int64_t *>cnp.PyArray_DATA(key_pos)
                c.value_pos = <int64_t *>cnp.PyArray_DATA(value_pos)
            else:
                c.key_pos = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
                c.value_pos = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
                if c.key_pos == NULL or c.value_pos == NULL:
                    free(c.key_pos)
                    free(c.value_pos)
                    raise MemoryError()
            try:
                with nogil:
                    e = kf_columns_parse(r.start, r.end, <int32_t>n, self.base_offset,
                                         self.first_timestamp, log_append, self.max_timestamp,
                                         &c, &fault)
                if e != KF_OK:
                    raise self._error(e, fault, r)
                if deferred:
                    return DeferredColumns(offsets, timestamps, key_ends, value_ends, key_nulls,
                                           value_nulls, self._headers_column(r, c.has_headers),
                                           self, key_pos, value_pos)
                kdata = np.empty(c.key_bytes, dtype=np.uint8)
                vdata = np.empty(c.value_bytes, dtype=np.uint8)
                with nogil:
                    kf_columns_copy(r.start, <int32_t>n, &c, <uint8_t *>cnp.PyArray_DATA(kdata),
                                    <uint8_t *>cnp.PyArray_DATA(vdata))
            finally:
                if not deferred:
                    free(c.key_pos)
                    free(c.value_pos)
            return Columns(offsets, timestamps, (kdata, key_ends), (vdata, value_ends),
                           key_nulls, value_nulls, self._headers_column(r, c.has_headers))
        finally:
            r.close()

    cdef object _headers_column(self, _Region r, bint has_headers):
        """Every record's header list (records already checked by pass 1), or None."""
        cdef const uint8_t *p
        cdef kf_rec rec
        cdef int32_t i
        if not has_headers:
            return None
        headers = []
        p = r.start
        for i in range(self.count):
            kf_parse_record(&p, r.end, &rec)
            headers.append([] if rec.header_count == 0 else _headers_list(
                rec.headers, rec.end, rec.header_count))
        return headers

    def copy_fields(self, pos, ends, Py_ssize_t start, Py_ssize_t stop, out, Py_ssize_t at):
        """Copy the key (or value) bytes of records ``[start, stop)`` of this uncompressed
        batch into ``out[at:]`` (a writable uint8 array): ``pos`` and ``ends`` are the fields'
        positions in the batch's records and their cumulative lengths, as
        ``columns(defer=True)`` found them. Every range is checked against the batch and
        ``out`` before its bytes are copied; returns the bytes copied."""
        cdef const int64_t[::1] ps = pos
        cdef const int64_t[::1] es = ends
        cdef uint8_t[::1] dst = out
        cdef Py_ssize_t n = self.count, i, bad = -1
        cdef int64_t ln, span, lo, hi
        cdef const int64_t *pp
        cdef const int64_t *ep
        cdef uint8_t *d
        if self.compression != 0:
            raise ValueError("copy_fields reads uncompressed batches only")
        if not 0 <= start <= stop <= n:
            raise ValueError(f"record range [{start}, {stop}) outside a batch of {n}")
        if ps.shape[0] < n or es.shape[0] != n + 1:
            raise ValueError("field positions do not match the batch's record count")
        lo, hi = es[start], es[stop]
        if hi < lo or at < 0 or at + (hi - lo) > dst.shape[0]:
            raise ValueError(f"{hi - lo} field bytes do not fit at {at} of {dst.shape[0]}")
        if hi == lo:
            return 0
        cdef _Region r = self._region()
        try:
            span = r.end - r.start
            pp = &ps[0]
            ep = &es[0]
            d = &dst[at] - lo  # record i's bytes go to d + ep[i], inside out[at:at + hi - lo]
            with nogil:
                for i in range(start, stop):
                    ln = ep[i + 1] - ep[i]
                    if ln < 0 or ep[i] < lo or ep[i + 1] > hi or (
                            ln and (pp[i] < 0 or pp[i] > span - ln)):
                        bad = i
                        break
                    if ln:
                        memcpy(d + ep[i], r.start + pp[i], <size_t>ln)
            if bad >= 0:
                raise ValueError(f"field of record {bad} lies outside the batch")
            return hi - lo
        finally:
            r.close()


cdef RecordBatch _batch_at(object mv, const uint8_t *base, Py_ssize_t pos, Py_ssize_t length,
                           bint verify_crc, object budget):
    cdef RecordBatch b = RecordBatch.__new__(RecordBatch)
    cdef const uint8_t *p = base + pos
    cdef uint32_t actual
    cdef int attrs
    b.mv = mv
    b.budget = budget
    b.base = base
    b.pos = pos
    b.byte_size = KF_LOG_OVERHEAD + length
    b.base_offset = <int64_t>kf_load_be64(p)
    b.partition_leader_epoch = <int32_t>kf_load_be32(p + 12)
    b.magic = 2
    b.crc = kf_load_be32(p + 17)
    attrs = <int16_t>kf_load_be16(p + 21)
    b.attributes = attrs
    b.last_offset_delta = <int32_t>kf_load_be32(p + 23)
    b.first_timestamp = <int64_t>kf_load_be64(p + 27)
    b.max_timestamp = <int64_t>kf_load_be64(p + 35)
    b.producer_id = <int64_t>kf_load_be64(p + 43)
    b.producer_epoch = <int16_t>kf_load_be16(p + 51)
    b.base_sequence = <int32_t>kf_load_be32(p + 53)
    b.count = <int32_t>kf_load_be32(p + 57)
    if verify_crc:
        actual = _crc(p + KF_CRC_START, b.byte_size - KF_CRC_START)
        if actual != b.crc:
            raise CorruptRecordError(
                f"record batch CRC mismatch: stored {b.crc:#010x}, computed {actual:#010x}", pos)
    b.compression = attrs & 0x07
    if b.compression > 4:
        raise CorruptRecordError(f"unknown compression code {b.compression}", pos + 21)
    b.timestamp_type = TS_LOG_APPEND if attrs & ATTR_LOG_APPEND_TIME else TS_CREATE
    b.is_transactional = (attrs & ATTR_TRANSACTIONAL) != 0
    b.is_control = (attrs & ATTR_CONTROL) != 0
    if b.count < 0:
        raise CorruptRecordError(f"negative record count {b.count}", pos + 57)
    b.next_offset = <int64_t>(<uint64_t>b.base_offset + <uint64_t>(<int64_t>b.last_offset_delta)
                              + 1)
    return b


#: ``decode_batches`` calls that checked their CRCs without the GIL (counted holding it).
cdef unsigned long long _nogil_crc_passes = 0


def nogil_crc_passes():
    """How many ``decode_batches`` calls so far checked their CRCs in one pass without the
    GIL (batches adding up to 8 MiB or more)."""
    return _nogil_crc_passes


cdef Py_ssize_t _crc_checked_upto(const uint8_t *base, Py_ssize_t n) noexcept nogil:
    """End of the leading run of complete magic 2 batches in ``base[0:n]`` whose stored CRC
    matches their bytes. It stops before the first batch that is partial, too short, of
    another magic or fails its CRC: the checking pass holding the GIL reports that one."""
    cdef Py_ssize_t pos = 0, left
    cdef int32_t length
    while pos < n:
        left = n - pos
        if left < KF_LOG_OVERHEAD:
            break
        length = <int32_t>kf_load_be32(base + pos + 8)
        if length < MIN_V2_LENGTH or length > left - KF_LOG_OVERHEAD or base[pos + 16] != 2:
            break
        if kf_crc32c(0, base + pos + KF_CRC_START,
                     <size_t>(KF_LOG_OVERHEAD + length - KF_CRC_START)) \
                != kf_load_be32(base + pos + 17):
            break
        pos += KF_LOG_OVERHEAD + length
    return pos


class _LegacyRecordBatch(LegacyRecordBatch):
    __doc__ = LegacyRecordBatch.__doc__
    record_type = Record


def decode_batches(data, *, verify_crc=True, allow_partial=True, budget=None):
    """Every complete batch in ``data``; a trailing partial batch is ignored unless
    ``allow_partial`` is False (then it raises ``CorruptRecordError``). Every decompression of
    these batches draws from ``budget`` (a new ``DecompressionBudget()`` if None)."""
    cdef Py_buffer view
    cdef const uint8_t *base
    cdef Py_ssize_t pos = 0, n, left
    cdef int32_t length
    cdef int magic
    cdef bint crc = bool(verify_crc)
    cdef Py_ssize_t checked = 0
    global _nogil_crc_passes
    mv = byte_view(data)
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
    base = <const uint8_t *>view.buf
    n = view.len
    PyBuffer_Release(&view)  # `mv` keeps the export alive
    if crc and n >= CRC_NOGIL_MIN:
        # Many batches of ordinary size that add up to a checksum worth giving the GIL up
        # for: their CRCs are checked in one pass without it (one hand-off for all).
        with nogil:
            checked = _crc_checked_upto(base, n)
        _nogil_crc_passes += 1
    if budget is None:
        budget = _codecs.DecompressionBudget()
    out = []
    while pos < n:
        left = n - pos
        if left < KF_LOG_OVERHEAD:
            if allow_partial:
                break
            raise CorruptRecordError(f"truncated batch: {left} bytes left", pos)
        length = <int32_t>kf_load_be32(base + pos + 8)
        if length < MIN_LEGACY_LENGTH:
            raise CorruptRecordError(f"batch length {length} below the minimum", pos + 8)
        if length > left - KF_LOG_OVERHEAD:
            if allow_partial:
                break
            raise CorruptRecordError(
                f"truncated batch: length {length} but {left - KF_LOG_OVERHEAD} bytes left", pos)
        magic = base[pos + 16]
        if magic == 2:
            if length < MIN_V2_LENGTH:
                raise CorruptRecordError(f"batch length {length} below the magic 2 minimum",
                                         pos + 8)
            # batches before ``checked`` had their CRC checked without the GIL
            out.append(_batch_at(mv, base, pos, length, crc and pos >= checked, budget))
        elif magic < 2:
            out.append(_LegacyRecordBatch(mv, pos, length, crc, budget))
        else:
            raise CorruptRecordError(f"unknown magic {magic}", pos + 16)
        pos += KF_LOG_OVERHEAD + length
    return out


# ---------------------------------------------------------------------------------------------
# varints


def zigzag_encode(value):
    """Map a signed int64 to an unsigned one (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    cdef int64_t v = _i64(value, "value")
    return kf_zigzag(v)


def zigzag_decode(value):
    """Inverse of ``zigzag_encode``."""
    cdef uint64_t u = value
    return kf_unzigzag(u)


def size_of_varint(value):
    """Encoded size in bytes of ``value`` as a zigzag varint/varlong."""
    return kf_varint_size(_i64(value, "value"))


def encode_varint(value):
    """Zigzag varint of a signed int32 (1 to 5 bytes)."""
    cdef uint8_t out[10]
    cdef int64_t v
    try:
        v = value
    except OverflowError:
        v = 1 << 40
    if v < -2147483648 or v > INT32_MAX:
        raise OverflowError(f"{value} does not fit in a varint (int32)")
    return PyBytes_FromStringAndSize(<char *>out, kf_put_varint(out, v) - out)


def encode_varlong(value):
    """Zigzag varint of a signed int64 (1 to 10 bytes)."""
    cdef uint8_t out[10]
    cdef int64_t v = _i64(value, "value")
    return PyBytes_FromStringAndSize(<char *>out, kf_put_varint(out, v) - out)


cdef tuple _decode_var(object buf, Py_ssize_t pos, object end, int max_bytes, int bits, str what):
    cdef Py_buffer view
    cdef uint64_t u
    cdef int err = 0
    cdef const uint8_t *q
    cdef Py_ssize_t stop
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        stop = view.len if end is None else min(<Py_ssize_t>end, view.len)
        if pos < 0 or pos > stop:
            raise IndexError(f"position {pos} outside the buffer")
        q = kf_get_uvarint(<const uint8_t *>view.buf + pos, <const uint8_t *>view.buf + stop,
                           max_bytes, bits, &u, &err)
        if q == NULL:
            if err == KF_E_TRUNCATED_VARINT:
                raise CorruptRecordError(f"truncated {what}", pos)
            raise CorruptRecordError(f"{what} overflows int{bits}", pos)
        return kf_unzigzag(u), q - <const uint8_t *>view.buf
    finally:
        PyBuffer_Release(&view)


def decode_varint(buf, Py_ssize_t pos=0, end=None):
    """Read a zigzag int32 varint at ``pos`` (not past ``end``); returns ``(value, next_pos)``."""
    return _decode_var(buf, pos, end, 5, 32, "varint")


def decode_varlong(buf, Py_ssize_t pos=0, end=None):
    """Read a zigzag int64 varint at ``pos`` (not past ``end``); returns ``(value, next_pos)``."""
    return _decode_var(buf, pos, end, 10, 64, "varlong")
