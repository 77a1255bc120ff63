"""CRC32C (Castagnoli) over any contiguous buffer, with a CPU-specific path chosen at run time."""

import os
import warnings

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.number cimport PyNumber_Index
from libc.stdint cimport uint32_t


cdef extern from "crc32c.h" nogil:
    uint32_t kf_crc32c(uint32_t crc, const void *buf, size_t len)
    const char *kf_crc32c_impl()
    size_t kf_crc32c_impls(const char **names, size_t max)
    int kf_crc32c_select(const char *name)


# Below this size the checksum takes less time than handing the GIL over and back.
cdef Py_ssize_t NOGIL_MIN = 8192


cdef inline uint32_t _start_value(object value) except? 0xFFFFFFFF:
    if type(value) is not int:
        try:
            value = PyNumber_Index(value)
        except TypeError:
            raise TypeError(
                f"crc32c() value must be an int, not {type(value).__name__}"
            ) from None
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"crc32c() value must be in 0..0xFFFFFFFF, got {value!r}")
    return <uint32_t>value


def crc32c(data, value=0):
    """Return the CRC32C of ``data`` continued from ``value`` (0 to start).

    ``data`` is any C-contiguous buffer (bytes, bytearray, memoryview, numpy array, ...);
    ``crc32c(b, crc32c(a)) == crc32c(a + b)``. The GIL is released for large inputs.
    """
    cdef uint32_t crc = _start_value(value)
    cdef Py_buffer view
    cdef const char *ptr
    cdef Py_ssize_t size
    if type(data) is bytes:
        ptr = PyBytes_AS_STRING(data)
        size = PyBytes_GET_SIZE(data)
        if size < NOGIL_MIN:
            return kf_crc32c(crc, ptr, <size_t>size)
        with nogil:
            crc = kf_crc32c(crc, ptr, <size_t>size)
        return crc
    try:
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    except (TypeError, BufferError, ValueError) as exc:
        raise TypeError(
            "crc32c() data must be a C-contiguous bytes-like object "
            f"(bytes, bytearray, memoryview, numpy array), not {type(data).__name__}: {exc}"
        ) from None
    try:
        if view.len < NOGIL_MIN:
            crc = kf_crc32c(crc, view.buf, <size_t>view.len)
        else:
            with nogil:
                crc = kf_crc32c(crc, view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return crc


def crc32c_impl():
    """Name of the path in use, e.g. ``"vpclmul-avx512"`` or ``"slicing-by-8"``."""
    return kf_crc32c_impl().decode("ascii")


def available_impls():
    """Names of the paths this CPU supports, best first."""
    cdef const char *names[16]
    cdef size_t count = kf_crc32c_impls(names, 16)
    if count > 16:
        count = 16
    return tuple([names[i].decode("ascii") for i in range(count)])


def use_impl(name=None):
    """Use the named path in this module from now on (None: the best one the CPU supports).

    Raises ValueError naming the supported paths when ``name`` is not one of them. The
    environment variable ``KAFKA_FAST_CRC32C_IMPL`` makes the same choice for every module.
    """
    if name is None:
        kf_crc32c_select(NULL)
        return
    if not isinstance(name, str):
        raise TypeError(f"use_impl() name must be a str or None, not {type(name).__name__}")
    cdef bytes encoded = name.encode("ascii", "replace")
    if kf_crc32c_select(encoded) != 0:
        raise ValueError(
            f"CRC32C path {name!r} is not available on this CPU; available: "
            + ", ".join(available_impls())
        )


def _check_requested():
    wanted = os.environ.get("KAFKA_FAST_CRC32C_IMPL", "")
    if wanted and wanted != crc32c_impl():
        warnings.warn(
            f"KAFKA_FAST_CRC32C_IMPL={wanted!r} is not available on this CPU; using "
            f"{crc32c_impl()!r} (available: {', '.join(available_impls())})",
            RuntimeWarning,
            stacklevel=2,
        )


_check_requested()
