# cython: language_level=3
"""Build ``Message`` objects from decoded record columns, compiled (twin: ``kafka_fast._pure.columns``).

``append_messages`` turns a run of one batch's columns into ``Message`` objects in one C loop:
the instance is allocated with the type's ``tp_alloc`` and its slots are written directly at the
offsets the slot descriptors report (the same store the descriptors perform), so a message
costs its allocation plus the key and value ``bytes``.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_FromLongLong
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int64_t, uint8_t

import numpy as np

from kafka_fast.message import Message


cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        const char *name
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    PyTypeObject PyMemberDescr_Type
    PyObject *PyType_GenericAlloc(PyTypeObject *t, Py_ssize_t n) except NULL
    void PyObject_GC_UnTrack(void *op)
    int PyObject_IS_GC(PyObject *op)
    int T_OBJECT_EX


cdef PyTypeObject *MSG_TYPE = <PyTypeObject *>Message
cdef Py_ssize_t O_TOPIC, O_PARTITION, O_OFFSET, O_KEY, O_VALUE, O_HEADERS
cdef Py_ssize_t O_TSTYPE, O_TS, O_ERROR, O_LATENCY, O_EPOCH


cdef Py_ssize_t _slot(str name) except -1:
    descr = Message.__dict__[name]
    descr_type = type(descr)
    if <PyTypeObject *>descr_type is not &PyMemberDescr_Type:
        raise TypeError(f"Message.{name} is not a slot")
    cdef PyMemberDef *m = (<PyMemberDescrObject *><PyObject *>descr).d_member
    if m.type != T_OBJECT_EX:
        raise TypeError(f"Message.{name} is not an object slot")
    return m.offset


O_TOPIC = _slot("_topic")
O_PARTITION = _slot("_partition")
O_OFFSET = _slot("_offset")
O_KEY = _slot("_key")
O_VALUE = _slot("_value")
O_HEADERS = _slot("_headers")
O_TSTYPE = _slot("_timestamp_type")
O_TS = _slot("_timestamp")
O_ERROR = _slot("_error")
O_LATENCY = _slot("_latency")
O_EPOCH = _slot("_leader_epoch")


cdef inline void _put(object obj, Py_ssize_t off, object value):
    # Steals nothing: takes a new reference to value, drops the old one.
    cdef PyObject **slot = <PyObject **>((<char *><PyObject *>obj) + off)
    cdef PyObject *old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject *>value
    Py_XDECREF(old)


cdef inline object _field(const uint8_t[::1] data, const int64_t[::1] offs,
                          const uint8_t[::1] nulls, bint has_nulls, Py_ssize_t i):
    if has_nulls and nulls[i]:
        return None
    cdef int64_t lo = offs[i]
    cdef int64_t hi = offs[i + 1]
    if lo < 0 or hi < lo or hi > data.shape[0]:
        raise ValueError(f"column offsets out of bounds at record {i}")
    return PyBytes_FromStringAndSize(<const char *>&data[0] + lo if data.shape[0] else NULL,
                                     hi - lo)


cdef inline const uint8_t[::1] _bytes_view(obj):
    return np.asarray(obj).view(np.uint8).reshape(-1)


def append_messages(list out, str topic, int partition, cols, Py_ssize_t start,
                    Py_ssize_t stop, int timestamp_type, int leader_epoch):
    """Append ``Message`` objects for records ``[start, stop)`` of ``cols`` to ``out``.

    ``cols`` is a ``kafka_fast.records.Columns``. Returns the number appended.
    """
    cdef const int64_t[::1] offsets = cols.offsets
    cdef const int64_t[::1] timestamps = cols.timestamps
    kdata, koffs_obj = cols.keys
    vdata, voffs_obj = cols.values
    cdef const uint8_t[::1] kd = _bytes_view(kdata)
    cdef const int64_t[::1] ko = koffs_obj
    cdef const uint8_t[::1] vd = _bytes_view(vdata)
    cdef const int64_t[::1] vo = voffs_obj
    cdef const uint8_t[::1] kn = _bytes_view(cols.key_nulls)
    cdef const uint8_t[::1] vn = _bytes_view(cols.value_nulls)
    cdef Py_ssize_t n = offsets.shape[0]
    if start < 0 or stop > n or start > stop:
        raise ValueError(f"record range [{start}, {stop}) outside a batch of {n}")
    if (timestamps.shape[0] != n or ko.shape[0] != n + 1 or vo.shape[0] != n + 1
            or kn.shape[0] != n or vn.shape[0] != n):
        raise ValueError("record columns have inconsistent lengths")
    headers = cols.headers
    cdef bint has_headers = headers is not None
    if has_headers and len(headers) != n:
        raise ValueError("record headers column has the wrong length")
    part = partition
    tstype = timestamp_type
    epoch = leader_epoch if leader_epoch >= 0 else None
    cdef Py_ssize_t i
    cdef object msg
    cdef bint untrack = not has_headers
    for i in range(start, stop):  # every slice checked first: all records or none
        if not (0 <= ko[i] <= ko[i + 1] <= kd.shape[0] and 0 <= vo[i] <= vo[i + 1] <= vd.shape[0]):
            raise ValueError(f"column offsets out of bounds at record {i}")
    for i in range(start, stop):
        msg = <object>PyType_GenericAlloc(MSG_TYPE, 0)
        # PyType_GenericAlloc returned a new reference that <object> took over once more.
        Py_XDECREF(<PyObject *>msg)
        _put(msg, O_TOPIC, topic)
        _put(msg, O_PARTITION, part)
        _put(msg, O_OFFSET, PyLong_FromLongLong(offsets[i]))
        _put(msg, O_KEY, _field(kd, ko, kn, True, i))
        _put(msg, O_VALUE, _field(vd, vo, vn, True, i))
        if has_headers:
            h = headers[i]
            _put(msg, O_HEADERS, h if h else None)
        else:
            _put(msg, O_HEADERS, None)
        _put(msg, O_TSTYPE, tstype)
        _put(msg, O_TS, PyLong_FromLongLong(timestamps[i]))
        _put(msg, O_ERROR, None)
        _put(msg, O_LATENCY, None)
        _put(msg, O_EPOCH, epoch)
        if untrack:
            # Holds only bytes, ints, str and None (headers lists stay tracked themselves),
            # so it can never close a reference cycle: keep it out of the cycle collector,
            # which would otherwise rescan every message of a large consume() list.
            PyObject_GC_UnTrack(<PyObject *>msg)
        out.append(msg)
    return stop - start
