# cython: language_level=3
"""The partition choice other compiled modules call (``kafka_fast.producer._produce``)."""

from libc.stdint cimport int32_t, uint8_t


cdef int32_t choose_partition(const uint8_t *data, Py_ssize_t length, bint null,
                              int32_t n, int algorithm) noexcept nogil
