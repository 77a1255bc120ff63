# cython: language_level=3
"""Non-blocking socket calls that keep the interpreter lock unless told otherwise.

Python's socket methods release the interpreter lock around every system call. On a
non-blocking socket the call never waits, but giving the lock up costs the I/O thread up to
one switch interval (5 ms by default) to get it back while an application thread is busy
producing. These calls keep the lock (``MSG_DONTWAIT`` guarantees they return at once) unless
the caller passes ``nogil_bytes`` >= 0: a call moving at least that many bytes (the buffers
given to ``sendmsg``, the range given to ``recv``) then runs without it
(``kafka_fast.net.lock_policy`` decides when).
Pure-Python twin: ``kafka_fast._pure.sockio``.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport EAGAIN, EINTR, errno
from libc.stdlib cimport free, malloc
from libc.string cimport memset
from posix.uio cimport iovec


cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    ctypedef long ssize_t
    struct msghdr:
        void *msg_name
        socklen_t msg_namelen
        iovec *msg_iov
        size_t msg_iovlen
        void *msg_control
        size_t msg_controllen
        int msg_flags
    ssize_t c_sendmsg "sendmsg"(int fd, const msghdr *msg, int flags)
    ssize_t c_recv "recv"(int fd, void *buf, size_t n, int flags)
    int MSG_DONTWAIT
    int MSG_NOSIGNAL


cdef extern from "<errno.h>" nogil:
    int EWOULDBLOCK


NATIVE = True
#: Most buffers passed to one ``send_chunks`` call (IOV_MAX is 1024 on Linux).
MAX_IOV = 512


#: Calls made without the interpreter lock so far (counted holding it).
cdef unsigned long long _released = 0


def released_calls():
    """How many calls so far ran without the interpreter lock (``nogil_bytes``)."""
    return _released


cdef inline object _os_error(int err):
    import os
    return OSError(err, os.strerror(err))


def send_chunks(sock, chunks, Py_ssize_t nogil_bytes=-1):
    """Send the leading buffers of ``chunks`` (an iterable of contiguous buffers) on the
    socket ``sock`` with one ``sendmsg``; at most ``MAX_IOV`` of them. Returns the bytes sent,
    or -1 when the socket takes nothing now. Raises ``OSError`` on a socket error. With
    ``nogil_bytes`` >= 0, buffers of at least that many bytes in all are sent without the
    interpreter lock."""
    cdef int fd = sock.fileno()
    cdef Py_buffer *views = <Py_buffer *>malloc(MAX_IOV * sizeof(Py_buffer))
    cdef iovec *iov = <iovec *>malloc(MAX_IOV * sizeof(iovec))
    cdef msghdr msg
    cdef int count = 0
    cdef int i
    cdef ssize_t n
    cdef int err
    cdef Py_ssize_t total = 0
    cdef bint release
    global _released
    if views == NULL or iov == NULL:
        free(views)
        free(iov)
        raise MemoryError()
    try:
        for chunk in chunks:
            if count == MAX_IOV:
                break
            PyObject_GetBuffer(chunk, &views[count], PyBUF_SIMPLE)
            iov[count].iov_base = views[count].buf
            iov[count].iov_len = <size_t>views[count].len
            total += views[count].len
            count += 1
        if count == 0:
            return 0
        memset(&msg, 0, sizeof(msg))
        msg.msg_iov = iov
        msg.msg_iovlen = count
        release = 0 <= nogil_bytes <= total
        while True:
            if release:
                with nogil:
                    n = c_sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL)
                    err = errno
                _released += 1
            else:
                n = c_sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL)
                err = errno
            if n >= 0:
                return n
            if err == EINTR:
                continue
            if err == EAGAIN or err == EWOULDBLOCK:
                return -1
            raise _os_error(err)
    finally:
        for i in range(count):
            PyBuffer_Release(&views[i])
        free(views)
        free(iov)


def recv_into(sock, buffer, Py_ssize_t start, Py_ssize_t end, Py_ssize_t nogil_bytes=-1):
    """Receive from the socket ``sock`` into ``buffer[start:end]`` (a writable buffer).
    Returns the bytes read, 0 at end of stream, or -1 when nothing is available. Raises
    ``OSError`` on a socket error and ``ValueError`` when the range does not lie inside the
    buffer. With ``nogil_bytes`` >= 0, a range of at least that many bytes is received
    without the interpreter lock."""
    cdef int fd = sock.fileno()
    cdef Py_buffer view
    cdef ssize_t n
    cdef int err
    cdef char *at
    cdef size_t length
    cdef bint release
    global _released
    PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        if start < 0 or end < start or end > view.len:
            raise ValueError(
                f"receive range {start}:{end} outside a buffer of {view.len} bytes")
        at = <char *>view.buf + start
        length = <size_t>(end - start)
        release = 0 <= nogil_bytes <= end - start
        while True:
            if release:
                with nogil:
                    n = c_recv(fd, at, length, MSG_DONTWAIT)
                    err = errno
                _released += 1
            else:
                n = c_recv(fd, at, length, MSG_DONTWAIT)
                err = errno
            if n >= 0:
                return n
            if err == EINTR:
                continue
            if err == EAGAIN or err == EWOULDBLOCK:
                return -1
            raise _os_error(err)
    finally:
        PyBuffer_Release(&view)
