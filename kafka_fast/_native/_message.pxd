# cython: language_level=3
"""``Message``'s fields, written directly by the compiled builders (``_columns.pyx``)."""

from libc.stdint cimport int32_t, int64_t


cdef class Message:
    cdef object topic_, key_, value_, headers_, error_
    cdef int64_t offset_, timestamp_
    cdef int32_t partition_, timestamp_type_, leader_epoch_, delivered_
    cdef double latency_

    cdef tuple _args(self)


cdef Message new_message(object topic, int32_t partition, int64_t offset, object key,
                         object value, object headers, int32_t tstype, int64_t ts, object error,
                         int32_t epoch)
