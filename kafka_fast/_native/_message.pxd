# cython: language_level=3
"""``Message``'s fields, written directly by the compiled builders (``_columns.pyx``)."""

from libc.stdint cimport int32_t, int64_t


cdef class Message:
    cdef object topic_, key_, value_, headers_, error_
    cdef int64_t offset_, timestamp_
    cdef int32_t partition_, timestamp_type_, leader_epoch_, delivered_
    cdef double latency_

    cdef tuple _args(self)
