# cython: language_level=3, binding=False
"""The producer's routing state, compiled (twin: ``kafka_fast._pure.routing``).

The accumulator, its topic and partition states (``kafka_fast.producer.accumulator``) subclass
these classes so that ``produce()``'s per-record path (``_produce.pyx``) reads and writes C
fields; the fields are declared in ``_routing.pxd``.
"""

from cpython.pythread cimport PyThread_allocate_lock, PyThread_free_lock


cdef class RouteLock:
    """A mutex like ``threading.Lock`` whose uncontended acquire is a C call."""

    def __cinit__(self):
        self._lock = PyThread_allocate_lock()
        if self._lock == NULL:
            raise MemoryError("cannot allocate a lock")

    def __dealloc__(self):
        if self._lock != NULL:
            PyThread_free_lock(self._lock)

    def acquire(self, blocking=True):
        """Take the lock; with ``blocking=False`` only if it is free. True if taken."""
        if blocking:
            lock_take(self)
            return True
        if PyThread_acquire_lock(self._lock, NOWAIT_LOCK):
            self._held = True
            return True
        return False

    def release(self):
        if not self._held:
            raise RuntimeError("release unlocked lock")
        lock_give(self)

    def locked(self):
        return self._held

    def __enter__(self):
        lock_take(self)
        return True

    def __exit__(self, *exc):
        lock_give(self)
        return False


cdef class PartitionRoute:
    """Per-partition routing state: ``fast`` is the open batch produce()'s fast path may
    append to (None when the general path must run); ``entries`` the delivery data kept for
    that batch's records (None while no record asked for a report)."""


cdef class TopicRoute:
    """Per-topic routing state: partition count, partition states, sticky partition."""


cdef class RouterState:
    """The accumulator's counters and flags that produce() checks for every record."""
