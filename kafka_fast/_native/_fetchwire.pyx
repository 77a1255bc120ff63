# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Fetch responses (v4-v18) read into column arrays, without the interpreter lock.

``parse_fetch(body, version)`` walks one FetchResponse body once, with the lock released,
and returns a ``FetchWire``: the top-level throttle time, error code and session id, the
topics (names before v13, ``uuid.UUID`` topic IDs from v13), and one row per partition in
``array.array`` columns: its topic's index in ``topics``, partition, error code, high
watermark, last stable offset, log start offset, preferred read replica, the position and
length of its records inside ``body`` (``records(i)`` is a memoryview of them, no copy; -1
length for null), and its aborted transactions as ``(producer id, first offset)`` pairs in
``aborted`` (``aborted_count`` -1 for a null list). It returns None for a response carrying
what the columns do not (a partition's diverging epoch, current leader or snapshot id, or
node endpoints): read that one with the generated codec. Other tagged fields are skipped.
Every length and count is checked against the bytes left; malformed bytes raise
``ProtocolError``. Pure-Python twin: ``kafka_fast._pure.fetchwire``.
"""

from cpython cimport array
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc

import array as _array
from uuid import UUID

from kafka_fast.errors import ProtocolError

NATIVE = True
#: Fetch versions ``parse_fetch`` reads.
MIN_VERSION = 4
MAX_VERSION = 18

cdef array.array _I32 = _array.array("i", [])
cdef array.array _I16 = _array.array("h", [])
cdef array.array _I64 = _array.array("q", [])

cdef enum:
    E_SHORT = 1       # a fixed field or a length runs past the end
    E_NULL = 2        # a null where the field is not nullable
    E_NEGATIVE = 3    # a length below -1
    E_VARINT_LONG = 4
    E_VARINT_BIG = 5
    E_COUNT = 6       # an element count larger than the bytes left
    E_MEMORY = 7


cdef struct Reader:
    const uint8_t *p
    Py_ssize_t n
    Py_ssize_t pos
    int kind
    const char *what
    int64_t value


cdef struct Part:
    int32_t topic
    int32_t partition
    int16_t error
    int64_t high_watermark
    int64_t last_stable
    int64_t log_start
    int32_t replica
    int64_t rec_pos
    int64_t rec_len
    int64_t ab_start
    int32_t ab_count


cdef struct Out:
    int32_t throttle
    int16_t error
    int32_t session
    Py_ssize_t ntopics
    Py_ssize_t topics_cap
    int64_t *topic_pos   # pairs: position, length
    Py_ssize_t nparts
    Py_ssize_t parts_cap
    Part *parts
    Py_ssize_t naborted
    Py_ssize_t aborted_cap
    int64_t *aborted     # pairs: producer id, first offset


cdef inline int fail(Reader *r, int kind, const char *what, int64_t value) noexcept nogil:
    r.kind = kind
    r.what = what
    r.value = value
    return -1


cdef inline int need(Reader *r, int64_t k, const char *what) noexcept nogil:
    if r.n - r.pos < k:
        return fail(r, E_SHORT, what, k)
    return 0


cdef inline uint32_t be32(const uint8_t *p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3]


cdef inline int32_t rd32(Reader *r) noexcept nogil:
    cdef int32_t v = <int32_t>be32(r.p + r.pos)
    r.pos += 4
    return v


cdef inline int16_t rd16(Reader *r) noexcept nogil:
    cdef int16_t v = <int16_t>((<uint32_t>r.p[r.pos] << 8) | r.p[r.pos + 1])
    r.pos += 2
    return v


cdef inline int64_t rd64(Reader *r) noexcept nogil:
    cdef uint64_t hi = be32(r.p + r.pos)
    cdef uint64_t lo = be32(r.p + r.pos + 4)
    r.pos += 8
    return <int64_t>((hi << 32) | lo)


cdef int uvarint(Reader *r, uint32_t *out, const char *what) noexcept nogil:
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef uint8_t b
    while shift <= 28:
        if r.pos >= r.n:
            return fail(r, E_SHORT, what, 1)
        b = r.p[r.pos]
        r.pos += 1
        value |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            if value > <uint64_t>0xFFFFFFFFU:
                return fail(r, E_VARINT_BIG, what, 0)
            out[0] = <uint32_t>value
            return 0
        shift += 7
    return fail(r, E_VARINT_LONG, what, 0)


cdef int count(Reader *r, bint flexible, bint nullable, int64_t size, int64_t *out,
               const char *what) noexcept nogil:
    """An array's element count (-1: null, only if ``nullable``), checked against the bytes
    left at ``size`` bytes per element."""
    cdef uint32_t u
    cdef int64_t n
    if flexible:
        if uvarint(r, &u, what) < 0:
            return -1
        n = <int64_t>u - 1
    else:
        if need(r, 4, what) < 0:
            return -1
        n = rd32(r)
        if n < -1:
            return fail(r, E_NEGATIVE, what, n)
    if n == -1:
        if not nullable:
            return fail(r, E_NULL, what, 0)
        out[0] = -1
        return 0
    if n * size > r.n - r.pos:
        return fail(r, E_COUNT, what, n)
    out[0] = n
    return 0


cdef int read_tags(Reader *r, uint32_t known, bint endpoints) noexcept nogil:
    """A tagged-field section: 0 when it holds only fields the columns need not carry (with
    ``known`` 0: any section, skipped), 1 when it holds one of the ``known`` tags (a bit
    mask) - the caller falls back to the generated codec. With ``endpoints`` (v16+
    responses), tag 0 is the node endpoints: an empty array is carried (it is the default),
    a null one is malformed."""
    cdef uint32_t n, tag, size, u
    cdef uint32_t i
    cdef Py_ssize_t end, saved
    cdef int found = 0
    if uvarint(r, &n, "tagged field count") < 0:
        return -1
    if <int64_t>n > r.n - r.pos:
        return fail(r, E_COUNT, "tagged fields", n)
    for i in range(n):
        if uvarint(r, &tag, "tagged field tag") < 0 or uvarint(r, &size, "tagged field size") < 0:
            return -1
        if need(r, size, "tagged field") < 0:
            return -1
        end = r.pos + size
        if endpoints and tag == 0:
            saved = r.n
            r.n = end
            if uvarint(r, &u, "node endpoints") < 0:
                return -1
            r.n = saved
            if u == 0:
                return fail(r, E_NULL, "node endpoints", 0)
            if u > 1:
                found = 1
        elif tag < 32 and (known >> tag) & 1:
            found = 1
        r.pos = end
    return found


cdef int grow(void **buf, Py_ssize_t *cap, Py_ssize_t want, size_t item) noexcept nogil:
    cdef Py_ssize_t c = cap[0]
    cdef void *p
    if want <= c:
        return 0
    if c < 16:
        c = 16
    while c < want:
        c *= 2
    p = realloc(buf[0], <size_t>c * item)
    if p == NULL:
        return -1
    buf[0] = p
    cap[0] = c
    return 0


cdef int parse(Reader *r, int version, Out *o) noexcept nogil:
    """0: parsed; 1: carries fields the columns do not (tagged fields); -1: malformed."""
    cdef bint flexible = version >= 12
    cdef int64_t ntopics, nparts, nab, k, t, j, length
    cdef uint32_t u
    cdef int rc
    cdef Part *pt
    if flexible or version >= 7:
        if need(r, 10, "throttle time, error code, session id") < 0:
            return -1
        o.throttle = rd32(r)
        o.error = rd16(r)
        o.session = rd32(r)
    else:
        if need(r, 4, "throttle time") < 0:
            return -1
        o.throttle = rd32(r)
    if count(r, flexible, False, 1, &ntopics, "topics") < 0:
        return -1
    if grow(<void **>&o.topic_pos, &o.topics_cap, ntopics, 2 * sizeof(int64_t)) < 0:
        return fail(r, E_MEMORY, "topics", ntopics)
    for t in range(ntopics):
        if version >= 13:
            if need(r, 16, "topic id") < 0:
                return -1
            length = 16
        elif flexible:
            if uvarint(r, &u, "topic name length") < 0:
                return -1
            if u == 0:
                return fail(r, E_NULL, "topic name", 0)
            length = <int64_t>u - 1
            if need(r, length, "topic name") < 0:
                return -1
        else:
            if need(r, 2, "topic name length") < 0:
                return -1
            length = rd16(r)
            if length < 0:
                return fail(r, E_NULL, "topic name", 0)
            if need(r, length, "topic name") < 0:
                return -1
        o.topic_pos[2 * t] = r.pos
        o.topic_pos[2 * t + 1] = length
        r.pos += length
        o.ntopics = t + 1
        if count(r, flexible, False, 1, &nparts, "partitions") < 0:
            return -1
        if grow(<void **>&o.parts, &o.parts_cap, o.nparts + nparts, sizeof(Part)) < 0:
            return fail(r, E_MEMORY, "partitions", nparts)
        for j in range(nparts):
            pt = &o.parts[o.nparts]
            pt.topic = <int32_t>t
            if need(r, 22 if version < 5 else 30, "partition header") < 0:
                return -1
            pt.partition = rd32(r)
            pt.error = rd16(r)
            pt.high_watermark = rd64(r)
            pt.last_stable = rd64(r)
            pt.log_start = rd64(r) if version >= 5 else -1
            pt.replica = -1
            if count(r, flexible, True, 17 if flexible else 16, &nab,
                     "aborted transactions") < 0:
                return -1
            pt.ab_start = o.naborted
            pt.ab_count = <int32_t>nab
            if nab > 0:
                if grow(<void **>&o.aborted, &o.aborted_cap, 2 * (o.naborted + nab),
                        sizeof(int64_t)) < 0:
                    return fail(r, E_MEMORY, "aborted transactions", nab)
                for k in range(nab):
                    if need(r, 16, "aborted transaction") < 0:
                        return -1
                    o.aborted[2 * o.naborted] = rd64(r)
                    o.aborted[2 * o.naborted + 1] = rd64(r)
                    o.naborted += 1
                    if flexible and read_tags(r, 0, False) < 0:
                        return -1
            if version >= 11:
                if need(r, 4, "preferred read replica") < 0:
                    return -1
                pt.replica = rd32(r)
            if flexible:
                if uvarint(r, &u, "records length") < 0:
                    return -1
                length = <int64_t>u - 1
            else:
                if need(r, 4, "records length") < 0:
                    return -1
                length = rd32(r)
                if length < -1:
                    return fail(r, E_NEGATIVE, "records", length)
            if length >= 0 and need(r, length, "records") < 0:
                return -1
            pt.rec_pos = r.pos
            pt.rec_len = length
            if length > 0:
                r.pos += length
            o.nparts += 1
            if flexible:
                rc = read_tags(r, 0b111, False)  # diverging epoch, current leader, snapshot
                if rc != 0:
                    return rc
        if flexible and read_tags(r, 0, False) < 0:
            return -1
    if flexible:
        return read_tags(r, 0, version >= 16)
    return 0


cdef str _message(Reader *r, int version):
    what = r.what.decode("ascii")
    if r.kind == E_SHORT:
        detail = f"{what} needs {r.value} bytes, {r.n - r.pos} left"
    elif r.kind == E_NULL:
        detail = f"null {what} where the field is not nullable"
    elif r.kind == E_NEGATIVE:
        detail = f"negative {what} length {r.value}"
    elif r.kind == E_VARINT_LONG:
        detail = f"{what}: unsigned varint longer than 5 bytes"
    elif r.kind == E_VARINT_BIG:
        detail = f"{what}: unsigned varint exceeds 32 bits"
    elif r.kind == E_COUNT:
        detail = f"{r.value} {what} exceed the {r.n - r.pos} bytes left"
    else:
        detail = f"out of memory for {r.value} {what}"
    return f"FetchResponse v{version}: {detail} (at byte {r.pos})"


cdef class FetchWire:
    """One Fetch response in columns (see the module's docstring); ``len()`` is the number
    of partitions."""

    cdef readonly int version
    cdef readonly int throttle_time_ms
    cdef readonly int error_code
    cdef readonly int session_id
    cdef readonly list topics
    cdef readonly array.array topic_index
    cdef readonly array.array partition_index
    cdef readonly array.array partition_error
    cdef readonly array.array high_watermark
    cdef readonly array.array last_stable_offset
    cdef readonly array.array log_start_offset
    cdef readonly array.array preferred_read_replica
    cdef readonly array.array records_pos
    cdef readonly array.array records_len
    cdef readonly array.array aborted_start
    cdef readonly array.array aborted_count
    cdef readonly array.array aborted
    cdef readonly object buffer

    def __len__(self):
        return len(self.topic_index)

    def records(self, Py_ssize_t i):
        """Partition ``i``'s records: a memoryview of the response (None if null)."""
        cdef int64_t n = self.records_len[i]
        if n < 0:
            return None
        cdef int64_t start = self.records_pos[i]
        return self.buffer[start:start + n]

    def aborted_transactions(self, Py_ssize_t i):
        """Partition ``i``'s aborted transactions as ``[(producer id, first offset)]``
        (None for a null list)."""
        cdef int32_t n = self.aborted_count[i]
        if n < 0:
            return None
        cdef Py_ssize_t s = 2 * self.aborted_start[i]
        ab = self.aborted
        return [(ab[s + 2 * k], ab[s + 2 * k + 1]) for k in range(n)]


cdef array.array _column(array.array template, Py_ssize_t n):
    return array.clone(template, n, zero=False)


def parse_fetch(body, int version, Py_ssize_t nogil_bytes=-1):
    """``body`` (a FetchResponse after its header) at ``version`` as a ``FetchWire``, or None
    when it carries tagged fields the columns do not hold. A body of at least ``nogil_bytes``
    bytes (if >= 0) is walked without the interpreter lock (``kafka_fast.net.lock_policy``)."""
    if version < MIN_VERSION or version > MAX_VERSION:
        raise ValueError(f"FetchResponse v{version} is not read here "
                         f"(v{MIN_VERSION}-v{MAX_VERSION})")
    mv = memoryview(body)
    if mv.ndim != 1 or mv.itemsize != 1 or mv.format != "B":
        mv = mv.cast("B")
    cdef Py_buffer view
    cdef Reader r
    cdef Out o
    cdef int rc
    cdef Py_ssize_t i, n
    cdef FetchWire w
    cdef Part *pt
    PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
    r.p = <const uint8_t *>view.buf
    r.n = view.len
    r.pos = 0
    r.kind = 0
    r.what = b""
    r.value = 0
    o.throttle = 0
    o.error = 0
    o.session = 0
    o.ntopics = 0
    o.topics_cap = 0
    o.topic_pos = NULL
    o.nparts = 0
    o.parts_cap = 0
    o.parts = NULL
    o.naborted = 0
    o.aborted_cap = 0
    o.aborted = NULL
    try:
        if 0 <= nogil_bytes <= view.len:
            with nogil:
                rc = parse(&r, version, &o)
        else:
            rc = parse(&r, version, &o)
        if rc < 0:
            raise ProtocolError(_message(&r, version))
        if rc > 0:
            return None
        w = FetchWire.__new__(FetchWire)
        w.version = version
        w.throttle_time_ms = o.throttle
        w.error_code = o.error
        w.session_id = o.session
        w.buffer = mv
        topics = []
        for i in range(o.ntopics):
            start = o.topic_pos[2 * i]
            stop = start + o.topic_pos[2 * i + 1]
            if version >= 13:
                topics.append(UUID(bytes=bytes(mv[start:stop])))
            else:
                try:
                    topics.append(str(mv[start:stop], "utf-8"))
                except UnicodeDecodeError as exc:
                    raise ProtocolError(f"FetchResponse v{version}: topic name is not "
                                        f"UTF-8 ({exc})") from None
        w.topics = topics
        n = o.nparts
        w.topic_index = _column(_I32, n)
        w.partition_index = _column(_I32, n)
        w.partition_error = _column(_I16, n)
        w.high_watermark = _column(_I64, n)
        w.last_stable_offset = _column(_I64, n)
        w.log_start_offset = _column(_I64, n)
        w.preferred_read_replica = _column(_I32, n)
        w.records_pos = _column(_I64, n)
        w.records_len = _column(_I64, n)
        w.aborted_start = _column(_I64, n)
        w.aborted_count = _column(_I32, n)
        for i in range(n):
            pt = &o.parts[i]
            w.topic_index.data.as_ints[i] = pt.topic
            w.partition_index.data.as_ints[i] = pt.partition
            w.partition_error.data.as_shorts[i] = pt.error
            (<int64_t *>w.high_watermark.data.as_voidptr)[i] = pt.high_watermark
            (<int64_t *>w.last_stable_offset.data.as_voidptr)[i] = pt.last_stable
            (<int64_t *>w.log_start_offset.data.as_voidptr)[i] = pt.log_start
            w.preferred_read_replica.data.as_ints[i] = pt.replica
            (<int64_t *>w.records_pos.data.as_voidptr)[i] = pt.rec_pos
            (<int64_t *>w.records_len.data.as_voidptr)[i] = pt.rec_len
            (<int64_t *>w.aborted_start.data.as_voidptr)[i] = pt.ab_start
            w.aborted_count.data.as_ints[i] = pt.ab_count
        w.aborted = _column(_I64, 2 * o.naborted)
        for i in range(2 * o.naborted):
            (<int64_t *>w.aborted.data.as_voidptr)[i] = o.aborted[i]
        return w
    finally:
        PyBuffer_Release(&view)
        free(o.topic_pos)
        free(o.parts)
        free(o.aborted)
