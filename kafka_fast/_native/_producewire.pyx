# cython: language_level=3
"""Produce request framing and Produce response parsing, the producer's per-request wire work.

``frame_produce`` lays out a whole Produce request frame (size, header, body) around the
producer's encoded batches: the small fields go into one buffer, each batch of at least
``inline_below`` bytes is a chunk of its own (never copied), ready for a gathering ``sendmsg``.
``parse_produce_response`` walks a Produce response body into columns (``array.array``), or
answers None when the response carries what the columns cannot (an error code, record errors,
an error message, tagged fields): the caller then decodes it with the generated decoder.

The version layout is given by the caller as flags taken from the generated message classes
(``kafka_fast.producer.wire``). The byte work runs in C functions that do not need the
interpreter lock; a call gives the lock up only for at least ``nogil_bytes`` bytes of work (if
``nogil_bytes`` >= 0), as the socket calls do (``kafka_fast.net.lock_policy``): giving it up for
short work costs the I/O thread a switch interval while the application runs Python code.
Every read is bounds-checked; malformed input raises ``ValueError``.
Pure-Python twin: ``kafka_fast._pure.producewire``.
"""

from cpython cimport array
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

import array as _array_module

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


NATIVE = True

#: Calls whose byte work ran without the interpreter lock so far (counted holding it).
cdef unsigned long long _released = 0

cdef array.array _I32 = _array_module.array("i")
cdef array.array _I16 = _array_module.array("h")
cdef array.array _I64 = _array_module.array("q")


def released_calls():
    """How many calls so far did their byte work without the interpreter lock."""
    return _released


# -- framing ------------------------------------------------------------------------------------

ctypedef struct _Topic:
    const char *name      # UTF-8 name, or the 16 bytes of the topic id
    Py_ssize_t name_len
    Py_ssize_t nparts
    Py_ssize_t first      # index of its first partition in the partition table


ctypedef struct _Part:
    int32_t index
    const char *data
    Py_ssize_t size
    bint inline
    Py_ssize_t at         # offset in the small-field buffer where the batch goes


cdef inline Py_ssize_t _uvarint_len(uint32_t v) noexcept nogil:
    cdef Py_ssize_t n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline char *_put_uvarint(char *p, uint32_t v) noexcept nogil:
    while v >= 0x80:
        p[0] = <char>((v & 0x7F) | 0x80)
        p += 1
        v >>= 7
    p[0] = <char>v
    return p + 1


cdef inline char *_put_i16(char *p, int16_t v) noexcept nogil:
    cdef uint16_t u = <uint16_t>v
    p[0] = <char>(u >> 8)
    p[1] = <char>u
    return p + 2


cdef inline char *_put_i32(char *p, int32_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <char>(u >> 24)
    p[1] = <char>(u >> 16)
    p[2] = <char>(u >> 8)
    p[3] = <char>u
    return p + 4



cdef inline char *_put_str(char *p, const char *s, Py_ssize_t n, bint compact) noexcept nogil:
    """A string (never null here): int16 length or uvarint length + 1, then the bytes."""
    if compact:
        p = _put_uvarint(p, <uint32_t>(n + 1))
    else:
        p = _put_i16(p, <int16_t>n)
    memcpy(p, s, n)
    return p + n


cdef inline char *_put_count(char *p, Py_ssize_t n, bint compact) noexcept nogil:
    if compact:
        return _put_uvarint(p, <uint32_t>(n + 1))
    return _put_i32(p, <int32_t>n)


cdef char *_write_frame(char *p, int32_t frame_size, int16_t api_version,
                        int32_t correlation_id, const char *client_id,
                        Py_ssize_t client_id_len, int header_version,
                        const char *txn_id, Py_ssize_t txn_len, int16_t acks,
                        int32_t timeout_ms, _Topic *topics, Py_ssize_t ntopics,
                        _Part *parts, bint flexible, bint topic_ids,
                        char *base) noexcept nogil:
    """Write every small field of the frame from ``p`` (``base`` is the buffer's start);
    records each non-inline batch's offset in ``parts[i].at``. Returns the end."""
    cdef Py_ssize_t t, i
    cdef _Part *part
    p = _put_i32(p, frame_size)
    p = _put_i16(p, 0)  # API key: Produce
    p = _put_i16(p, api_version)
    p = _put_i32(p, correlation_id)
    # ClientId keeps the classic nullable int16-length string in every header version.
    if client_id == NULL:
        p = _put_i16(p, -1)
    else:
        p = _put_str(p, client_id, client_id_len, False)
    if header_version == 2:
        p[0] = 0
        p += 1
    if txn_id == NULL:
        if flexible:
            p[0] = 0
            p += 1
        else:
            p = _put_i16(p, -1)
    else:
        p = _put_str(p, txn_id, txn_len, flexible)
    p = _put_i16(p, acks)
    p = _put_i32(p, timeout_ms)
    p = _put_count(p, ntopics, flexible)
    for t in range(ntopics):
        if topic_ids:
            memcpy(p, topics[t].name, 16)
            p += 16
        else:
            p = _put_str(p, topics[t].name, topics[t].name_len, flexible)
        p = _put_count(p, topics[t].nparts, flexible)
        for i in range(topics[t].first, topics[t].first + topics[t].nparts):
            part = &parts[i]
            p = _put_i32(p, part.index)
            if flexible:
                p = _put_uvarint(p, <uint32_t>(part.size + 1))
            else:
                p = _put_i32(p, <int32_t>part.size)
            if part.inline:
                memcpy(p, part.data, part.size)
                p += part.size
            else:
                part.at = p - base
            if flexible:
                p[0] = 0  # no tagged fields
                p += 1
        if flexible:
            p[0] = 0
            p += 1
    if flexible:
        p[0] = 0
        p += 1
    return p


cdef inline Py_ssize_t _str_size(Py_ssize_t n, bint compact):
    return (_uvarint_len(<uint32_t>(n + 1)) if compact else 2) + n


cdef const char *_utf8(object s, Py_ssize_t *size, str what) except? NULL:
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, not {type(s).__name__}")
    cdef const char *p = PyUnicode_AsUTF8AndSize(s, size)
    if size[0] > 0x7FFF:
        raise ValueError(f"{what} of {size[0]} bytes exceeds 32767")
    return p


def frame_produce(int api_version, int correlation_id, client_id, transactional_id,
                  int acks, int timeout_ms, topics, *, int header_version, bint flexible,
                  bint topic_ids, Py_ssize_t inline_below, Py_ssize_t nogil_bytes=-1):
    """The whole Produce request frame as a list of chunks for ``sendmsg``.

    ``topics`` is a sequence of ``(name_or_id, [(partition, batch), ...])``: a topic name
    (``str``), or with ``topic_ids`` the topic id's 16 bytes; each batch a contiguous buffer.
    Batches of at least ``inline_below`` bytes are chunks of their own (not copied); the
    other fields and smaller batches are memoryview slices of one ``bytearray``.
    ``header_version`` (1 or 2) and ``flexible`` (compact fields and tagged fields) follow
    the version. With ``nogil_bytes`` >= 0, a frame of at least that many bytes of fields is
    written without the interpreter lock.
    """
    global _released
    cdef Py_ssize_t ntopics, nparts = 0, t, i, j, k, n
    cdef Py_ssize_t small = 0, total_batches = 0
    cdef _Topic *tt = NULL
    cdef _Part *pp = NULL
    cdef Py_buffer *views = NULL
    cdef Py_ssize_t nviews = 0
    cdef const char *cid = NULL
    cdef Py_ssize_t cid_len = 0
    cdef const char *txn = NULL
    cdef Py_ssize_t txn_len = 0
    cdef Py_buffer idview
    cdef char *base
    cdef char *end
    cdef object out
    cdef bint release
    if header_version != 1 and header_version != 2:
        raise ValueError(f"Produce request header version {header_version} (1 or 2 expected)")
    if not (-0x8000 <= api_version <= 0x7FFF) or not (-0x8000 <= acks <= 0x7FFF):
        raise ValueError("api_version and acks must fit int16")
    topic_list = topics if isinstance(topics, list) else list(topics)
    ntopics = len(topic_list)
    part_lists = []
    for entry in topic_list:
        if not isinstance(entry, tuple) or len(<tuple>entry) != 2:
            raise TypeError("each topic must be a (name_or_id, partitions) tuple")
        plist = (<tuple>entry)[1]
        if not isinstance(plist, list):
            plist = list(plist)
        part_lists.append(plist)
        nparts += len(<list>plist)
    tt = <_Topic *>malloc((ntopics + 1) * sizeof(_Topic))
    pp = <_Part *>malloc((nparts + 1) * sizeof(_Part))
    views = <Py_buffer *>malloc((nparts + ntopics + 1) * sizeof(Py_buffer))
    if tt == NULL or pp == NULL or views == NULL:
        free(tt)
        free(pp)
        free(views)
        raise MemoryError()
    try:
        small = 4 + 2 + 2 + 4 + 2
        if client_id is not None:
            cid = _utf8(client_id, &cid_len, "client id")
            small += cid_len
        if header_version == 2:
            small += 1
        if transactional_id is not None:
            txn = _utf8(transactional_id, &txn_len, "transactional id")
            small += _str_size(txn_len, flexible)
        else:
            small += 1 if flexible else 2
        small += 6
        small += _uvarint_len(<uint32_t>(ntopics + 1)) if flexible else 4
        k = 0
        for t in range(ntopics):
            name = (<tuple>topic_list[t])[0]
            if topic_ids:
                PyObject_GetBuffer(name, &views[nviews], PyBUF_SIMPLE)
                nviews += 1
                if views[nviews - 1].len != 16:
                    raise ValueError(
                        f"a topic id is 16 bytes, not {views[nviews - 1].len}")
                tt[t].name = <const char *>views[nviews - 1].buf
                tt[t].name_len = 16
                small += 16
            else:
                tt[t].name = _utf8(name, &tt[t].name_len, "topic name")
                small += _str_size(tt[t].name_len, flexible)
            plist = part_lists[t]
            n = len(<list>plist)
            tt[t].nparts = n
            tt[t].first = k
            small += _uvarint_len(<uint32_t>(n + 1)) if flexible else 4
            for j in range(n):
                item = (<list>plist)[j]
                if not isinstance(item, tuple) or len(<tuple>item) != 2:
                    raise TypeError("each partition must be a (partition, batch) tuple")
                pp[k].index = <int32_t>(<tuple>item)[0]
                PyObject_GetBuffer((<tuple>item)[1], &views[nviews], PyBUF_SIMPLE)
                nviews += 1
                pp[k].data = <const char *>views[nviews - 1].buf
                pp[k].size = views[nviews - 1].len
                if pp[k].size > 0x7FFFFFFE:
                    raise ValueError(f"a batch of {pp[k].size} bytes does not fit a request")
                pp[k].inline = pp[k].size < inline_below
                pp[k].at = -1
                small += 4 + ((_uvarint_len(<uint32_t>(pp[k].size + 1)) if flexible else 4))
                if pp[k].inline:
                    small += pp[k].size
                else:
                    total_batches += pp[k].size
                if flexible:
                    small += 1
                k += 1
            if flexible:
                small += 1
        if flexible:
            small += 1
        if small - 4 + total_batches > 0x7FFFFFFF:
            raise ValueError(f"a Produce request of {small - 4 + total_batches} bytes "
                             "exceeds the largest frame")
        out = PyByteArray_FromStringAndSize(NULL, small)
        base = PyByteArray_AS_STRING(out)
        release = 0 <= nogil_bytes <= small
        if release:
            with nogil:
                end = _write_frame(base, <int32_t>(small - 4 + total_batches),
                                   <int16_t>api_version, correlation_id, cid, cid_len,
                                   header_version, txn, txn_len, <int16_t>acks, timeout_ms,
                                   tt, ntopics, pp, flexible, topic_ids, base)
            _released += 1
        else:
            end = _write_frame(base, <int32_t>(small - 4 + total_batches),
                               <int16_t>api_version, correlation_id, cid, cid_len,
                               header_version, txn, txn_len, <int16_t>acks, timeout_ms,
                               tt, ntopics, pp, flexible, topic_ids, base)
        if end - base != small:
            raise AssertionError(f"Produce framing wrote {end - base} of {small} bytes")
        if total_batches == 0:
            return [out]
        view = memoryview(out)
        chunks = []
        prev = 0
        k = 0
        for t in range(ntopics):
            plist = part_lists[t]
            for j in range(tt[t].nparts):
                if not pp[k].inline:
                    if pp[k].at > prev:
                        chunks.append(view[prev:pp[k].at])
                    chunks.append((<tuple>(<list>plist)[j])[1])
                    prev = pp[k].at
                k += 1
        if prev < small:
            chunks.append(view[prev:])
        return chunks
    finally:
        for i in range(nviews):
            PyBuffer_Release(&views[i])
        free(views)
        free(tt)
        free(pp)


# -- response parsing ---------------------------------------------------------------------------

# Outcomes of the walk besides 0 (parsed): the columns cannot carry the response, or why it
# is malformed.
cdef enum:
    FALLBACK = 1
    E_TRUNCATED = -1
    E_VARINT = -2
    E_LENGTH = -3
    E_COUNT = -4
    E_MEMORY = -5


ctypedef struct _Walk:
    const uint8_t *buf
    Py_ssize_t n
    Py_ssize_t pos
    bint flexible
    bint topic_ids
    bint append_time
    bint start_offset
    bint record_errors
    # topics: where each name (or id) is
    Py_ssize_t *name_at
    Py_ssize_t *name_len
    Py_ssize_t ntopics
    # partition columns
    int32_t *topic
    int32_t *part
    int16_t *err
    int64_t *base
    int64_t *lat
    int64_t *lso
    Py_ssize_t rows
    Py_ssize_t cap
    int32_t throttle


cdef inline int _need(_Walk *w, Py_ssize_t k) noexcept nogil:
    return 0 if w.n - w.pos >= k else E_TRUNCATED


cdef inline int64_t _get_i64(const uint8_t *p) noexcept nogil:
    return <int64_t>((<uint64_t>p[0] << 56) | (<uint64_t>p[1] << 48) | (<uint64_t>p[2] << 40)
                     | (<uint64_t>p[3] << 32) | (<uint64_t>p[4] << 24) | (<uint64_t>p[5] << 16)
                     | (<uint64_t>p[6] << 8) | <uint64_t>p[7])


cdef inline int32_t _get_i32(const uint8_t *p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8)
                     | <uint32_t>p[3])


cdef inline int16_t _get_i16(const uint8_t *p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | <uint16_t>p[1])


cdef int _uvarint(_Walk *w, uint32_t *out) noexcept nogil:
    cdef uint64_t value = 0
    cdef int shift = 0
    cdef uint8_t b
    while True:
        if w.pos >= w.n:
            return E_TRUNCATED
        b = w.buf[w.pos]
        w.pos += 1
        value |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            return E_VARINT
    if (value >> 32) != 0:
        return E_VARINT
    out[0] = <uint32_t>value
    return 0


cdef int _count(_Walk *w, Py_ssize_t *count, Py_ssize_t min_size) noexcept nogil:
    """An array length (classic int32 or compact uvarint); FALLBACK for a null array."""
    cdef uint32_t u
    cdef int32_t c
    cdef int rc
    if w.flexible:
        rc = _uvarint(w, &u)
        if rc:
            return rc
        if u == 0:
            return FALLBACK
        count[0] = <Py_ssize_t>u - 1
    else:
        if _need(w, 4):
            return E_TRUNCATED
        c = _get_i32(w.buf + w.pos)
        w.pos += 4
        if c < 0:
            return FALLBACK if c == -1 else E_COUNT
        count[0] = c
    if count[0] * min_size > w.n - w.pos:
        return E_COUNT
    return 0


cdef int _string(_Walk *w, Py_ssize_t *at, Py_ssize_t *length) noexcept nogil:
    """A string's place; ``at`` is -1 for null."""
    cdef uint32_t u
    cdef int16_t s
    cdef int rc
    if w.flexible:
        rc = _uvarint(w, &u)
        if rc:
            return rc
        if u == 0:
            at[0] = -1
            length[0] = 0
            return 0
        length[0] = <Py_ssize_t>u - 1
    else:
        if _need(w, 2):
            return E_TRUNCATED
        s = _get_i16(w.buf + w.pos)
        w.pos += 2
        if s < 0:
            if s != -1:
                return E_LENGTH
            at[0] = -1
            length[0] = 0
            return 0
        length[0] = s
    if length[0] > w.n - w.pos:
        return E_TRUNCATED
    at[0] = w.pos
    w.pos += length[0]
    return 0


cdef int _no_tags(_Walk *w) noexcept nogil:
    """A tagged-field section that must be empty (else FALLBACK)."""
    cdef uint32_t count
    cdef int rc = _uvarint(w, &count)
    if rc:
        return rc
    return FALLBACK if count else 0


cdef int _resize(void **column, Py_ssize_t cap, size_t item) noexcept nogil:
    """One column to ``cap`` items of ``item`` bytes (unchanged when memory runs out)."""
    cdef void *p = realloc(column[0], <size_t>cap * item)
    if p == NULL:
        return E_MEMORY
    column[0] = p
    return 0


cdef int _grow(_Walk *w, Py_ssize_t need) noexcept nogil:
    """Room for ``need`` partitions in every column."""
    cdef Py_ssize_t cap
    if need <= w.cap:
        return 0
    cap = w.cap * 2 if w.cap else 16
    while cap < need:
        cap *= 2
    if (_resize(<void **>&w.topic, cap, sizeof(int32_t))
            or _resize(<void **>&w.part, cap, sizeof(int32_t))
            or _resize(<void **>&w.err, cap, sizeof(int16_t))
            or _resize(<void **>&w.base, cap, sizeof(int64_t))
            or _resize(<void **>&w.lat, cap, sizeof(int64_t))
            or _resize(<void **>&w.lso, cap, sizeof(int64_t))):
        return E_MEMORY
    w.cap = cap
    return 0


cdef int _walk(_Walk *w) noexcept nogil:
    cdef Py_ssize_t ntopics, nparts, t, i, at, length, fixed
    cdef Py_ssize_t min_part
    cdef int rc
    cdef const uint8_t *p
    # smallest encoding of one partition / one topic (bounds every count before allocating)
    fixed = 4 + 2 + 8 + (8 if w.append_time else 0) + (8 if w.start_offset else 0)
    min_part = fixed + ((2 if w.flexible else 6) if w.record_errors else 0) \
        + (1 if w.flexible else 0)
    rc = _count(w, &ntopics, 2 if w.flexible else 6)
    if rc:
        return rc
    w.name_at = <Py_ssize_t *>malloc((ntopics + 1) * sizeof(Py_ssize_t))
    w.name_len = <Py_ssize_t *>malloc((ntopics + 1) * sizeof(Py_ssize_t))
    if w.name_at == NULL or w.name_len == NULL:
        return E_MEMORY
    for t in range(ntopics):
        if w.topic_ids:
            if _need(w, 16):
                return E_TRUNCATED
            w.name_at[t] = w.pos
            w.name_len[t] = 16
            w.pos += 16
        else:
            rc = _string(w, &at, &length)
            if rc:
                return rc
            if at < 0:
                return FALLBACK  # a null name: the generated decoder says what is wrong
            w.name_at[t] = at
            w.name_len[t] = length
        w.ntopics = t + 1
        rc = _count(w, &nparts, min_part)
        if rc:
            return rc
        rc = _grow(w, w.rows + nparts)
        if rc:
            return rc
        for i in range(nparts):
            if _need(w, fixed):
                return E_TRUNCATED
            p = w.buf + w.pos
            w.topic[w.rows] = <int32_t>t
            w.part[w.rows] = _get_i32(p)
            w.err[w.rows] = _get_i16(p + 4)
            w.base[w.rows] = _get_i64(p + 6)
            w.lat[w.rows] = _get_i64(p + 14) if w.append_time else -1
            w.lso[w.rows] = _get_i64(p + 22) if w.start_offset else -1
            w.pos += fixed
            if w.err[w.rows] != 0:
                return FALLBACK
            if w.record_errors:
                rc = _count(w, &length, 1)
                if rc:
                    return rc
                if length:
                    return FALLBACK
                rc = _string(w, &at, &length)
                if rc:
                    return rc
                if at >= 0:
                    return FALLBACK
            if w.flexible:
                rc = _no_tags(w)
                if rc:
                    return rc
            w.rows += 1
        if w.flexible:
            rc = _no_tags(w)
            if rc:
                return rc
    if _need(w, 4):
        return E_TRUNCATED
    w.throttle = _get_i32(w.buf + w.pos)
    w.pos += 4
    if w.flexible:
        rc = _no_tags(w)
        if rc:
            return rc
    return 0


cdef array.array _column(array.array template, const void *data, Py_ssize_t rows,
                         Py_ssize_t itemsize):
    cdef array.array a = array.clone(template, rows, False)
    if rows:
        memcpy(a.data.as_voidptr, data, rows * itemsize)
    return a


_MESSAGES = {
    E_TRUNCATED: "ends early",
    E_VARINT: "has an unsigned varint longer than 32 bits",
    E_LENGTH: "has a negative string length",
    E_COUNT: "has an array length larger than the bytes left",
}


def parse_produce_response(body, *, bint flexible, bint topic_ids, bint append_time,
                           bint start_offset, bint record_errors,
                           Py_ssize_t nogil_bytes=-1):
    """Walk a Produce response body (after the response header) into columns.

    Returns ``(topics, topic_index, partition, error_code, base_offset, log_append_time,
    log_start_offset, throttle_time_ms)``: ``topics`` the topic names (``str``) or, with
    ``topic_ids``, ids (16 ``bytes``) in the response's order, then one ``array.array`` per
    column with one row per partition (``topic_index`` indexes ``topics``; absent fields are
    -1). Returns None when the columns cannot carry the response: a partition with an error
    code, record errors or an error message, a tagged field, a null array or name. Raises
    ``ValueError`` on malformed bytes. Bytes after the body are ignored. With ``nogil_bytes``
    >= 0, a body of at least that many bytes is walked without the interpreter lock.
    """
    global _released
    cdef Py_buffer view
    cdef _Walk w
    cdef int rc
    cdef Py_ssize_t t
    PyObject_GetBuffer(body, &view, PyBUF_SIMPLE)
    w.buf = <const uint8_t *>view.buf
    w.n = view.len
    w.pos = 0
    w.flexible = flexible
    w.topic_ids = topic_ids
    w.append_time = append_time
    w.start_offset = start_offset
    w.record_errors = record_errors
    w.name_at = NULL
    w.name_len = NULL
    w.ntopics = 0
    w.topic = NULL
    w.part = NULL
    w.err = NULL
    w.base = NULL
    w.lat = NULL
    w.lso = NULL
    w.rows = 0
    w.cap = 0
    w.throttle = 0
    try:
        if 0 <= nogil_bytes <= w.n:
            with nogil:
                rc = _walk(&w)
            _released += 1
        else:
            rc = _walk(&w)
        if rc == FALLBACK:
            return None
        if rc == E_MEMORY:
            raise MemoryError()
        if rc:
            raise ValueError(f"malformed ProduceResponse: the body of {w.n} bytes "
                             f"{_MESSAGES[rc]} (at byte {w.pos})")
        topics = []
        for t in range(w.ntopics):
            if topic_ids:
                topics.append((<const char *>w.buf)[w.name_at[t]:w.name_at[t] + 16])
            else:
                try:
                    topics.append((<const char *>w.buf)[w.name_at[t]:w.name_at[t] + w.name_len[t]]
                                  .decode("utf-8"))
                except UnicodeDecodeError as exc:
                    raise ValueError(
                        f"malformed ProduceResponse: topic name is not UTF-8 ({exc})") from None
        return (topics, _column(_I32, w.topic, w.rows, 4), _column(_I32, w.part, w.rows, 4),
                _column(_I16, w.err, w.rows, 2), _column(_I64, w.base, w.rows, 8),
                _column(_I64, w.lat, w.rows, 8), _column(_I64, w.lso, w.rows, 8),
                w.throttle)
    finally:
        PyBuffer_Release(&view)
        free(w.name_at)
        free(w.name_len)
        free(w.topic)
        free(w.part)
        free(w.err)
        free(w.base)
        free(w.lat)
        free(w.lso)
