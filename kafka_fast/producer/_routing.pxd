# cython: language_level=3
"""The producer's routing state as C fields, for ``_produce.pyx``'s per-record path."""

from cpython.pythread cimport (
    NOWAIT_LOCK,
    WAIT_LOCK,
    PyThread_acquire_lock,
    PyThread_release_lock,
    PyThread_type_lock,
)


cdef class RouteLock:
    cdef PyThread_type_lock _lock
    cdef bint _held


cdef inline void lock_take(RouteLock lock):
    """Acquire ``lock``, waiting without the interpreter lock when it is held.

    Every taker holds the interpreter lock, so a waiter that woke up owning ``lock`` would
    then wait for the interpreter lock while holding it, and the thread running meanwhile
    would block on ``lock`` at its next call: two application threads calling produce()
    would hand both locks back and forth on every record. A waiter therefore only waits for
    ``lock`` to be given back, lets it go again, and takes it once it has the interpreter
    lock."""
    while not PyThread_acquire_lock(lock._lock, NOWAIT_LOCK):
        with nogil:
            PyThread_acquire_lock(lock._lock, WAIT_LOCK)
            PyThread_release_lock(lock._lock)
    lock._held = True


cdef inline void lock_give(RouteLock lock):
    lock._held = False
    PyThread_release_lock(lock._lock)


cdef class PartitionRoute:
    cdef public object fast
    cdef public object entries


cdef class TopicRoute:
    cdef public list parts
    cdef public int num_partitions
    cdef public int sticky


cdef class RouterState:
    cdef public RouteLock lock
    cdef public dict topics
    cdef public long long count
    cdef public long long count_limit
    cdef public bint linger_due
    cdef public bint wake
    cdef public int algorithm
    cdef public long long batch_records
